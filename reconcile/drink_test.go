package reconcile_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
	drinksv1beta1 "github.com/example/myoperator/apis/drinks/v1beta1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/reconcile"
	"github.com/example/myoperator/test/framework/testenv"
)

// writeAs creates the Drink, or rewrites its spec, through one API version.
func writeAs(t *testing.T, version string, key client.ObjectKey, spec drinksv1.DrinkSpec) {
	t.Helper()
	var obj client.Object
	var set func()
	switch version {
	case "v1alpha1":
		d := &drinksv1alpha1.Drink{}
		obj, set = d, func() { d.Spec = drinksv1alpha1.DrinkSpec{Name: spec.DisplayName, Drink: spec.Beverage} }
	case "v1beta1":
		d := &drinksv1beta1.Drink{}
		obj, set = d, func() {
			d.Spec = drinksv1beta1.DrinkSpec{Name: spec.DisplayName, Drink: spec.Beverage, Size: drinksv1beta1.Size(spec.Size), Sugar: spec.SugarCubes}
		}
	default:
		d := &drinksv1.Drink{}
		obj, set = d, func() { d.Spec = spec }
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(testCtx, key, obj); err != nil {
			obj.SetName(key.Name)
			obj.SetNamespace(key.Namespace)
			set()
			return k8s.Create(testCtx, obj)
		}
		set()
		return k8s.Update(testCtx, obj)
	})
	if err != nil {
		t.Fatalf("writing %s through %s: %v", key, version, err)
	}
}

// converged returns "" once the Drink's status observes its generation,
// is Ready, and its ConfigMap holds exactly want.
func converged(key client.ObjectKey, want map[string]string) func() string {
	return func() string {
		d := &drinksv1.Drink{}
		if err := k8s.Get(testCtx, key, d); err != nil {
			return err.Error()
		}
		if d.Status.ObservedGeneration != d.Generation || !meta.IsStatusConditionTrue(d.Status.Conditions, drinksv1.ConditionReady) {
			return fmt.Sprintf("Drink not converged: generation %d, status %+v", d.Generation, d.Status)
		}
		cm := &corev1.ConfigMap{}
		if err := k8s.Get(testCtx, key, cm); err != nil {
			return err.Error()
		}
		if !maps.Equal(cm.Data, want) {
			return fmt.Sprintf("ConfigMap data %v, want %v", cm.Data, want)
		}
		return ""
	}
}

// TestDrinkLayouts: the ConfigMap has exactly the keys of the authored
// version's layout; rewriting the spec through another version switches the
// layout and status.authoredVersion follows.
func TestDrinkLayouts(t *testing.T) {
	ns := namespace(t)
	spec := drinksv1.DrinkSpec{DisplayName: "Cup", Beverage: "tea", Size: drinksv1.SizeLarge, SugarCubes: 2, Extras: []string{"mint", "lemon"}}
	layouts := map[string]map[string]string{
		"v1alpha1": {"name": "Cup", "drink": "tea"},
		"v1beta1":  {"name": "Cup", "drink": "tea", "size": "Large", "sugar": "2"},
		"v1":       {"displayName": "Cup", "beverage": "tea", "size": "Large", "sugarCubes": "2", "extras": "lemon,mint"},
	}
	tests := []struct{ create, moveTo string }{
		{"v1alpha1", "v1beta1"},
		{"v1beta1", "v1"},
		{"v1", "v1alpha1"},
		{"v1alpha1", "v1"},
	}
	for i, tc := range tests {
		t.Run(tc.create+" then "+tc.moveTo, func(t *testing.T) {
			key := client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("layout-%d", i)}
			writeAs(t, "v1", key, spec) // extras and size exist whatever the version
			writeAs(t, tc.create, key, spec)
			// A v1 write with the same spec does not change the authored
			// version; writing through tc.create with a changed spec does.
			s := spec
			s.DisplayName = "Cup " + tc.create
			writeAs(t, tc.create, key, s)
			want := maps.Clone(layouts[tc.create])
			for _, k := range []string{"name", "displayName"} {
				if _, ok := want[k]; ok {
					want[k] = s.DisplayName
				}
			}
			testenv.Eventually(t, 10*time.Second, converged(key, want))
			assertAuthored(t, key, tc.create)

			s.DisplayName = "Cup " + tc.moveTo
			writeAs(t, tc.moveTo, key, s)
			want = maps.Clone(layouts[tc.moveTo])
			for _, k := range []string{"name", "displayName"} {
				if _, ok := want[k]; ok {
					want[k] = s.DisplayName
				}
			}
			testenv.Eventually(t, 10*time.Second, converged(key, want))
			assertAuthored(t, key, tc.moveTo)
		})
	}
}

func assertAuthored(t *testing.T, key client.ObjectKey, version string) {
	t.Helper()
	d := &drinksv1.Drink{}
	if err := k8s.Get(testCtx, key, d); err != nil {
		t.Fatal(err)
	}
	if d.Status.AuthoredVersion != version {
		t.Errorf("status.authoredVersion %q, want %q", d.Status.AuthoredVersion, version)
	}
	if got := kstatusOf(t, d); got != status.CurrentStatus {
		t.Errorf("kstatus of the converged Drink: %s, want Current", got)
	}
}

// TestConfigMapOwnedRestoredCorrected: the ConfigMap has the Drink as
// controller owner, comes back when deleted and is corrected when another
// writer changes the operator's keys; keys others add are left alone.
func TestConfigMapOwnedRestoredCorrected(t *testing.T) {
	ns := namespace(t)
	key := client.ObjectKey{Namespace: ns, Name: "owned"}
	writeAs(t, "v1alpha1", key, drinksv1.DrinkSpec{DisplayName: "Tea", Beverage: "tea"})
	want := map[string]string{"name": "Tea", "drink": "tea"}
	testenv.Eventually(t, 10*time.Second, converged(key, want))

	d := &drinksv1.Drink{}
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(testCtx, key, d); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(testCtx, key, cm); err != nil {
		t.Fatal(err)
	}
	ref := metav1.GetControllerOf(cm)
	if ref == nil || ref.UID != d.UID || ref.Kind != "Drink" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Fatalf("ConfigMap controller reference %+v, want the Drink %s", ref, d.UID)
	}

	oldUID := cm.UID
	deleted := time.Now()
	if err := k8s.Delete(testCtx, cm); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, func() string {
		got := &corev1.ConfigMap{}
		if err := k8s.Get(testCtx, key, got); err != nil {
			return "not restored: " + err.Error()
		}
		if got.UID == oldUID || !maps.Equal(got.Data, want) {
			return fmt.Sprintf("restored ConfigMap %s %v", got.UID, got.Data)
		}
		return ""
	})

	// Another writer changes a key of the layout and adds one of its own.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := &corev1.ConfigMap{}
		if err := k8s.Get(testCtx, key, got); err != nil {
			return err
		}
		got.Data["drink"] = "coffee"
		got.Data["note"] = "added by someone else"
		return k8s.Update(testCtx, got, client.FieldOwner("someone-else"))
	}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, func() string {
		got := &corev1.ConfigMap{}
		if err := k8s.Get(testCtx, key, got); err != nil {
			return err.Error()
		}
		if got.Data["drink"] != "tea" || got.Data["note"] != "added by someone else" {
			return fmt.Sprintf("ConfigMap data %v: want drink corrected to tea and the other writer's note kept", got.Data)
		}
		return ""
	})
	// One event each for the restore and the correction. The first render
	// has none (its Ready condition says it): had it one, the recorder
	// would have folded the restore into that older event.
	testenv.Eventually(t, 10*time.Second, func() string {
		var events []eventsv1.Event
		var reasons []string
		for _, e := range drinkEvents(t, key) {
			if strings.HasPrefix(e.Reason, "ConfigMap") { // not, say, ConfigMissing
				events = append(events, e)
				reasons = append(reasons, e.Reason)
			}
		}
		slices.Sort(reasons)
		if want := []string{reconcile.ReasonConfigMapCorrected, reconcile.ReasonConfigMapRestored}; !slices.Equal(reasons, want) {
			return fmt.Sprintf("event reasons %v, want %v", reasons, want)
		}
		for _, e := range events {
			if !e.EventTime.After(deleted) {
				return fmt.Sprintf("event %s at %s, before the ConfigMap was deleted (%s): an event of the first render", e.Reason, e.EventTime.Time, deleted)
			}
		}
		return ""
	})
}

// drinkEvents returns the events about a Drink.
func drinkEvents(t *testing.T, key client.ObjectKey) []eventsv1.Event {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := k8s.List(testCtx, list, client.InNamespace(key.Namespace)); err != nil {
		t.Fatal(err)
	}
	var events []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == "Drink" && e.Regarding.Name == key.Name {
			events = append(events, e)
		}
	}
	return events
}

// TestDrinkInProgressWhilePending: the object an update returns, before the
// reconciler observed it, is InProgress for kstatus; then Current.
func TestDrinkInProgressWhilePending(t *testing.T) {
	ns := namespace(t)
	key := client.ObjectKey{Namespace: ns, Name: "pending"}
	writeAs(t, "v1", key, drinksv1.DrinkSpec{DisplayName: "A", Beverage: "tea"})
	testenv.Eventually(t, 10*time.Second, converged(key, map[string]string{
		"displayName": "A", "beverage": "tea", "size": "Medium", "sugarCubes": "0", "extras": ""}))
	d := &drinksv1.Drink{}
	if err := k8s.Get(testCtx, key, d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Beverage = "coffee"
	if err := k8s.Update(testCtx, d); err != nil {
		t.Fatal(err)
	}
	if got := kstatusOf(t, d); got != status.InProgressStatus {
		t.Errorf("kstatus right after a spec change: %s, want InProgress", got)
	}
	testenv.Eventually(t, 10*time.Second, func() string {
		if err := k8s.Get(testCtx, key, d); err != nil {
			return err.Error()
		}
		if got := kstatusOf(t, d); got != status.CurrentStatus {
			return "kstatus " + string(got)
		}
		return ""
	})
}

// TestUnmanagedAndLogLevel: logLevel Debug makes debug lines appear without
// a restart; Unmanaged leaves a deleted ConfigMap deleted and says so in the
// Drink's status; Managed brings it back. The OperatorConfig reports
// Available and is Current for kstatus.
func TestUnmanagedAndLogLevel(t *testing.T) {
	ns := namespace(t)
	oc := &operatorv1alpha1.OperatorConfig{ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName}}
	oc.Spec.LogLevel = operatorv1alpha1.LogInfo
	if err := k8s.Create(testCtx, oc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(testCtx, oc) })
	setConfig := func(mutate func(*operatorv1alpha1.OperatorConfig)) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8s.Get(testCtx, client.ObjectKeyFromObject(oc), oc); err != nil {
				return err
			}
			mutate(oc)
			return k8s.Update(testCtx, oc)
		}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 10*time.Second, func() string {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(oc), oc); err != nil {
			return err.Error()
		}
		if !meta.IsStatusConditionTrue(oc.Status.Conditions, operatorv1alpha1.ConditionAvailable) ||
			kstatusOf(t, oc) != status.CurrentStatus || oc.Status.Effective == nil {
			return fmt.Sprintf("OperatorConfig status %+v", oc.Status)
		}
		return ""
	})

	key := client.ObjectKey{Namespace: ns, Name: "managed"}
	const debugLine = `"msg":"reconciling Drink"`
	writeAs(t, "v1alpha1", key, drinksv1.DrinkSpec{DisplayName: "Tea", Beverage: "tea"})
	testenv.Eventually(t, 10*time.Second, converged(key, map[string]string{"name": "Tea", "drink": "tea"}))
	if contains(logs.String(), debugLine) {
		t.Fatalf("debug lines logged at level Info")
	}
	setConfig(func(c *operatorv1alpha1.OperatorConfig) { c.Spec.LogLevel = operatorv1alpha1.LogDebug })
	writeAs(t, "v1alpha1", key, drinksv1.DrinkSpec{DisplayName: "Tea 2", Beverage: "tea"})
	testenv.Eventually(t, 10*time.Second, func() string {
		if !contains(logs.String(), debugLine) {
			return "no debug line after logLevel Debug"
		}
		return ""
	})

	setConfig(func(c *operatorv1alpha1.OperatorConfig) { c.Spec.ManagementState = operatorv1alpha1.Unmanaged })
	testenv.Eventually(t, 10*time.Second, func() string {
		d := &drinksv1.Drink{}
		if err := k8s.Get(testCtx, key, d); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(d.Status.Conditions, drinksv1.ConditionReady)
		if c == nil || c.Reason != "Unmanaged" || c.Status != metav1.ConditionFalse {
			return fmt.Sprintf("Drink Ready condition %+v, want False/Unmanaged", c)
		}
		return ""
	})
	if err := k8s.Delete(testCtx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if err := k8s.Get(testCtx, key, &corev1.ConfigMap{}); err == nil {
		t.Fatal("Unmanaged: the deleted ConfigMap came back")
	}
	setConfig(func(c *operatorv1alpha1.OperatorConfig) {
		c.Spec.ManagementState = operatorv1alpha1.Managed
		c.Spec.LogLevel = operatorv1alpha1.LogInfo
	})
	testenv.Eventually(t, 10*time.Second, converged(key, map[string]string{"name": "Tea 2", "drink": "tea"}))
}

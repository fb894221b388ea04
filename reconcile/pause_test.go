package reconcile_test

import (
	"fmt"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/internal/pause"
	"github.com/example/myoperator/test/framework/testenv"
)

// reconcileWrites reads the manager's myoperator_reconcile_writes histogram
// of controller (in this process): how many reconciles ran and how many API
// writes they made, counted at the manager's HTTP transport.
func reconcileWrites(t *testing.T, controller string) (reconciles uint64, writes float64) {
	t.Helper()
	m := controllerMetric(t, "myoperator_reconcile_writes", controller)
	if m == nil {
		t.Fatalf("no myoperator_reconcile_writes{controller=%q} series", controller)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

// settledWrites is reconcileWrites once no reconcile of controller is
// running: the reconcile that wrote the Paused condition records its
// write when it returns, which can be after the test has read the
// condition, and must not count as a write while paused.
func settledWrites(t *testing.T, controller string) (reconciles uint64, writes float64) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, func() string {
		m := controllerMetric(t, "controller_runtime_active_workers", controller)
		if m == nil {
			return "no controller_runtime_active_workers series"
		}
		if n := m.GetGauge().GetValue(); n != 0 {
			return fmt.Sprintf("%.0f reconciles of %s running", n, controller)
		}
		return ""
	})
	return reconcileWrites(t, controller)
}

// controllerMetric is the series of the metric family name whose label
// controller is controller, from the process's registry; nil if none.
func controllerMetric(t *testing.T, name, controller string) *dto.Metric {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					return m
				}
			}
		}
	}
	return nil
}

// setPaused sets (value "true" or "false") or removes (value "") the pause
// annotation on obj, as kubectl annotate would.
func setPaused(t *testing.T, obj client.Object, value string) {
	t.Helper()
	if err := k8s.Get(testCtx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	before := obj.DeepCopyObject().(client.Object)
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	if value == "" {
		delete(a, pause.Annotation)
	} else {
		a[pause.Annotation] = value
	}
	obj.SetAnnotations(a)
	if err := k8s.Patch(testCtx, obj, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}

// waitWriteless waits until controller has run at least n more reconciles
// than from, then requires that they wrote nothing.
func waitWriteless(t *testing.T, controller string, from uint64, fromWrites float64, n uint64, what string) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, func() string {
		if got, _ := reconcileWrites(t, controller); got < from+n {
			return fmt.Sprintf("%d reconciles of %s since the pause, want at least %d", got-from, controller, n)
		}
		return ""
	})
	count, writes := reconcileWrites(t, controller)
	t.Logf("%s: %d reconciles while paused, %.0f writes", what, count-from, writes-fromWrites)
	if writes != fromWrites {
		t.Errorf("%s: the paused object's reconciles wrote %.0f times, want 0", what, writes-fromWrites)
	}
}

// TestPauseDrink: the annotation example.com/paused: "true" sets Paused
// and Ready=False (reason Paused) in one status write; then a spec change
// and an edit of the ConfigMap are each reconciled with 0 writes (the
// write counter of every reconcile), the ConfigMap keeps the edit and the
// status is not touched; removing the annotation renders the new spec and
// clears Paused.
func TestPauseDrink(t *testing.T) {
	ns := namespace(t)
	d := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held"},
		Spec: drinksv1.DrinkSpec{DisplayName: "Held", Beverage: "tea"}}
	if err := k8s.Create(testCtx, d); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(d)
	condition := func(typ string) *metav1.Condition {
		if err := k8s.Get(testCtx, key, d); err != nil {
			t.Fatal(err)
		}
		return meta.FindStatusCondition(d.Status.Conditions, typ)
	}
	testenv.Eventually(t, 10*time.Second, func() string {
		if c := condition(drinksv1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Sprintf("not Ready: %+v", d.Status.Conditions)
		}
		return ""
	})

	setPaused(t, d, pause.On)
	testenv.Eventually(t, 10*time.Second, func() string {
		p, r := condition(pause.ConditionType), condition(drinksv1.ConditionReady)
		if p == nil || p.Status != metav1.ConditionTrue || r.Status != metav1.ConditionFalse || r.Reason != pause.Reason {
			return fmt.Sprintf("conditions %+v", d.Status.Conditions)
		}
		return ""
	})
	t.Logf("paused: %s", condition(pause.ConditionType).Message)
	reconciles, writes := settledWrites(t, "drink")

	// The user changes the spec, someone edits the ConfigMap.
	before := d.DeepCopy()
	d.Spec.Beverage = "coffee"
	if err := k8s.Patch(testCtx, d, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	specWritten := d.ResourceVersion
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(testCtx, key, cm); err != nil {
		t.Fatal(err)
	}
	cmBefore := cm.DeepCopy()
	cm.Data["beverage"] = "edited by hand"
	if err := k8s.Patch(testCtx, cm, client.MergeFrom(cmBefore)); err != nil {
		t.Fatal(err)
	}
	waitWriteless(t, "drink", reconciles, writes, 2, "Drink spec changed and ConfigMap edited")
	if err := k8s.Get(testCtx, key, cm); err != nil || cm.Data["beverage"] != "edited by hand" {
		t.Errorf("the paused Drink's ConfigMap was corrected: %v %v", cm.Data, err)
	}
	if err := k8s.Get(testCtx, key, d); err != nil || d.ResourceVersion != specWritten {
		t.Errorf("the paused Drink was written (resourceVersion %s, was %s after the spec change): %v", d.ResourceVersion, specWritten, err)
	}

	// "false" resumes as removing the annotation does.
	setPaused(t, d, pause.Off)
	testenv.Eventually(t, 10*time.Second, func() string {
		if err := k8s.Get(testCtx, key, cm); err != nil {
			return err.Error()
		}
		if cm.Data["beverage"] != "coffee" {
			return fmt.Sprintf("ConfigMap %v, want the new spec's beverage coffee", cm.Data)
		}
		if c := condition(pause.ConditionType); c != nil {
			return fmt.Sprintf("Paused still set: %+v", c)
		}
		if c := condition(drinksv1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || d.Status.ObservedGeneration != d.Generation {
			return fmt.Sprintf("not Ready at generation %d: %+v", d.Generation, d.Status)
		}
		return ""
	})
}

// TestPauseGuestbook: a paused Guestbook gets no failover and no drift
// correction (0 writes in every reconcile while its active pod is not
// Ready and its StatefulSet is scaled by hand); removing the annotation
// promotes a standby and puts the StatefulSet back.
func TestPauseGuestbook(t *testing.T) {
	g := &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: "held"},
		Spec: webappv1.GuestbookSpec{Size: 2, ConfigMapName: "held-cm"}}
	if err := k8s.Create(testCtx, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(testCtx, g) })
	pods := runPods(t, g)
	key := client.ObjectKeyFromObject(g)
	var first string
	testenv.Eventually(t, 10*time.Second, func() string {
		if err := k8s.Get(testCtx, key, g); err != nil {
			return err.Error()
		}
		if !meta.IsStatusConditionTrue(g.Status.Conditions, webappv1.ConditionReady) {
			return fmt.Sprintf("not Ready: %+v", g.Status)
		}
		first = g.Status.Active
		return ""
	})

	setPaused(t, g, pause.On)
	testenv.Eventually(t, 10*time.Second, func() string {
		if err := k8s.Get(testCtx, key, g); err != nil {
			return err.Error()
		}
		r := meta.FindStatusCondition(g.Status.Conditions, webappv1.ConditionReady)
		if !meta.IsStatusConditionTrue(g.Status.Conditions, pause.ConditionType) || r.Reason != pause.Reason {
			return fmt.Sprintf("conditions %+v", g.Status.Conditions)
		}
		return ""
	})
	paused := g.ResourceVersion
	reconciles, writes := settledWrites(t, "guestbook")

	setPodReady(t, first, false)
	sts := &appsv1.StatefulSet{}
	stsKey := client.ObjectKey{Namespace: operandNS, Name: g.Name}
	if err := k8s.Get(testCtx, stsKey, sts); err != nil {
		t.Fatal(err)
	}
	stsBefore := sts.DeepCopy()
	sts.Spec.Replicas = ptr.To[int32](5)
	if err := k8s.Patch(testCtx, sts, client.MergeFrom(stsBefore)); err != nil {
		t.Fatal(err)
	}
	waitWriteless(t, "guestbook", reconciles, writes, 2, "active pod not Ready and StatefulSet scaled")
	assertRoles(t, pods, first)
	if err := k8s.Get(testCtx, stsKey, sts); err != nil || *sts.Spec.Replicas != 5 {
		t.Errorf("the paused Guestbook's StatefulSet was corrected: %v %v", sts.Spec.Replicas, err)
	}
	if err := k8s.Get(testCtx, key, g); err != nil || g.ResourceVersion != paused {
		t.Errorf("the paused Guestbook's status was written (resourceVersion %s, was %s): %v", g.ResourceVersion, paused, err)
	}

	setPaused(t, g, "")
	testenv.Eventually(t, 10*time.Second, func() string {
		if err := k8s.Get(testCtx, key, g); err != nil {
			return err.Error()
		}
		if g.Status.Active == first || g.Status.Active == "" {
			return fmt.Sprintf("no failover after the pause: %+v", g.Status)
		}
		if meta.FindStatusCondition(g.Status.Conditions, pause.ConditionType) != nil {
			return "Paused still set"
		}
		if err := k8s.Get(testCtx, stsKey, sts); err != nil {
			return err.Error()
		}
		if *sts.Spec.Replicas != 2 {
			return fmt.Sprintf("StatefulSet replicas %d, want 2", *sts.Spec.Replicas)
		}
		return ""
	})
	assertRoles(t, pods, g.Status.Active)
}

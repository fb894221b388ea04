package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/bootstrap"
	"github.com/example/myoperator/internal/app"
	"github.com/example/myoperator/internal/opconfig"
	"github.com/example/myoperator/reconcile"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/framework/testutil"
	"github.com/example/myoperator/test/reliability"
)

// replicas runs the operator's two replicas in this process: both serve
// webhooks (the API server calls the first's, on envtest's port) and both
// elect a leader through the Lease, as the Deployment's two pods do.
type replicas struct {
	env    *envtest.Environment
	cfg    *rest.Config
	cancel context.CancelFunc
	done   []chan struct{}
}

func (r *replicas) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.done = nil
	wo := r.env.WebhookInstallOptions
	for i := range 2 {
		// Both serve webhooks, each on its own port with envtest's
		// certificate; the API server calls the first's.
		port := wo.LocalServingPort
		if i == 1 {
			port = testutil.FreePort(t)
		}
		o := app.InProcess(app.Options{
			Namespace: operatorNS, MetricsAddr: "0", ProbeAddr: "0",
			LeaderElection: true, LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
			WebhookHost: wo.LocalServingHost, WebhookPort: port, CertDir: wo.LocalServingCertDir,
		})
		mgr, err := app.New(r.cfg, o)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		r.done = append(r.done, done)
		go func() {
			defer close(done)
			if err := mgr.Start(ctx); err != nil {
				t.Logf("replica %d stopped: %v", i, err)
			}
		}()
		if i == 0 {
			if err := testenv.WaitForWebhookServer(ctx, mgr, 30*time.Second); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// stop stops both replicas and waits until they are gone, so that nothing
// the operator held in memory survives into the next start.
func (r *replicas) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	for _, d := range r.done {
		select {
		case <-d:
		case <-time.After(30 * time.Second):
			t.Fatal("a replica did not stop within 30s")
		}
	}
}

// TestConfigOutageNeverDestroys: the OperatorConfig deleted, then made
// invalid behind its (fail-open) webhook's back, each time with both
// replicas restarted meanwhile: the Guestbook's operands keep their UIDs,
// Unmanaged stays in force, and the record (missing) or the
// OperatorConfig's conditions (invalid) say why, never each Drink; a valid
// config clears it within 10 s. Deleted and recreated by the bootstrap with
// an empty spec, the OperatorConfig moves no operand.
func TestConfigOutageNeverDestroys(t *testing.T) {
	env, cfg, c := testenv.Start(t, testenv.Options{Webhooks: true})
	ctx := context.Background()
	for _, ns := range []string{operatorNS, "team-a", "drinks"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	// Accepted: operands in team-a, then Unmanaged.
	if err := c.Create(ctx, &operatorv1alpha1.OperatorConfig{
		ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName},
		Spec:       operatorv1alpha1.OperatorConfigSpec{Guestbook: operatorv1alpha1.GuestbookConfig{Namespace: "team-a"}},
	}); err != nil {
		t.Fatal(err)
	}
	r := &replicas{env: env, cfg: cfg}
	r.start(t)
	t.Cleanup(func() { r.cancel() })
	gb := &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: "gb"}, Spec: webappv1.GuestbookSpec{Size: 1, ConfigMapName: "gb-config"}}
	if err := c.Create(ctx, gb); err != nil {
		t.Fatal(err)
	}
	drink := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "drinks", Name: "tea"},
		Spec: drinksv1.DrinkSpec{DisplayName: "Tea", Beverage: "tea"}}
	if err := c.Create(ctx, drink); err != nil {
		t.Fatal(err)
	}
	uids := operandUIDs(t, c, "team-a", "gb")
	setSpec(t, c, func(s *operatorv1alpha1.OperatorConfigSpec) { s.ManagementState = operatorv1alpha1.Unmanaged })
	// The reconcilers act on a valid OperatorConfig before the record of
	// it is written; the record is written before the OperatorConfig's
	// status. Stopping the replicas between the two would leave the
	// previous record (Managed) for the outage to keep, as a loaded
	// machine once showed.
	waitConfig(t, c, "the Unmanaged config recorded", func(oc *operatorv1alpha1.OperatorConfig) string {
		if oc.Status.ObservedGeneration != oc.Generation || oc.Status.Effective == nil ||
			oc.Status.Effective.ManagementState != operatorv1alpha1.Unmanaged {
			return fmt.Sprintf("status at generation %d of %d, effective %+v", oc.Status.ObservedGeneration, oc.Generation, oc.Status.Effective)
		}
		return ""
	})
	waitGuestbook(t, c, "the Unmanaged config is in force", func(g *webappv1.Guestbook) string {
		return wantCondition(g.Status.Conditions, "Ready", metav1.ConditionFalse, reconcile.ReasonUnmanaged)
	})

	var unmanagedDrink string
	testenv.Eventually(t, 20*time.Second, func() string {
		d := &drinksv1.Drink{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(drink), d); err != nil {
			return err.Error()
		}
		unmanagedDrink = d.ResourceVersion
		return wantCondition(d.Status.Conditions, "Ready", metav1.ConditionFalse, reconcile.ReasonUnmanaged)
	})

	// 1. Deleted, both replicas restarted meanwhile. The outage changes no
	// Drink's or Guestbook's outcome, so it is said once, on the record
	// (and in the log, an event and the metric), not on each object.
	// restarts counts the times both replicas were stopped and started
	// again, operandChecks the times the operands' UIDs were found kept.
	restarts, operandChecks := 0, 0
	r.stop(t)
	deleteConfig(t, c)
	r.start(t)
	restarts++
	testenv.Eventually(t, 30*time.Second, func() string {
		rec := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: opconfig.RecordName}, rec); err != nil {
			return err.Error()
		}
		if rec.Annotations[reconcile.MissingSinceAnnotation] == "" {
			return fmt.Sprintf("the record's annotations %v do not say the OperatorConfig is missing", rec.Annotations)
		}
		return wantEvent(ctx, c, operatorNS, opconfig.RecordName, reconcile.ReasonConfigMissing)
	})
	waitGuestbook(t, c, "missing config: Unmanaged kept", func(g *webappv1.Guestbook) string {
		return wantCondition(g.Status.Conditions, "Ready", metav1.ConditionFalse, reconcile.ReasonUnmanaged)
	})
	// Both replicas have reconciled every object by now (the Guestbook's
	// status says Unmanaged under the new leader); the Drink was not
	// written.
	d := &drinksv1.Drink{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(drink), d); err != nil {
		t.Fatal(err)
	}
	// A changed resourceVersion is at least one write; the test cannot
	// tell how many.
	drinkWrites := 0
	if d.ResourceVersion != unmanagedDrink {
		drinkWrites = 1
	}
	if d.ResourceVersion != unmanagedDrink || meta.FindStatusCondition(d.Status.Conditions, reconcile.ConditionConfigDegraded) != nil {
		t.Errorf("the outage wrote the Drink: resourceVersion %s -> %s, conditions %+v", unmanagedDrink, d.ResourceVersion, d.Status.Conditions)
	}
	drinkEvents, err := countEvents(ctx, c, "drinks", "tea", reconcile.ReasonConfigMissing)
	if err != nil {
		t.Fatal(err)
	}
	if drinkEvents > 0 {
		t.Errorf("an event %s on the Drink: the outage is said on the record only", reconcile.ReasonConfigMissing)
	}
	checkOperandsKept(t, c, uids)
	operandChecks++

	// 2. Invalid behind the webhook's back (the replicas are down, the
	// webhook fails open), both replicas restarted meanwhile.
	r.stop(t)
	if err := c.Create(ctx, &operatorv1alpha1.OperatorConfig{
		ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName},
		Spec: operatorv1alpha1.OperatorConfigSpec{ManagementState: operatorv1alpha1.Managed,
			Guestbook: operatorv1alpha1.GuestbookConfig{Namespace: "kube-system"}},
	}); err != nil {
		t.Fatalf("storing an invalid OperatorConfig while the webhook is down: %v", err)
	}
	r.start(t)
	restarts++
	waitConfig(t, c, "invalid config: Degraded says so", func(oc *operatorv1alpha1.OperatorConfig) string {
		if msg := wantCondition(oc.Status.Conditions, operatorv1alpha1.ConditionDegraded, metav1.ConditionTrue, reconcile.ReasonInvalidConfig); msg != "" {
			return msg
		}
		if msg := wantCondition(oc.Status.Conditions, operatorv1alpha1.ConditionReady, metav1.ConditionFalse, reconcile.ReasonInvalidConfig); msg != "" {
			return msg
		}
		if src := oc.Status.Effective.Sources.ManagementState; src != operatorv1alpha1.SourceKept {
			return fmt.Sprintf("effective managementState's source %q, want kept", src)
		}
		if e := oc.Status.Effective; e == nil || e.ManagementState != operatorv1alpha1.Unmanaged || e.GuestbookNamespace != "team-a" {
			return fmt.Sprintf("effective %+v, want the accepted Unmanaged in team-a", e)
		}
		return ""
	})
	waitGuestbook(t, c, "invalid config: Unmanaged kept", func(g *webappv1.Guestbook) string {
		if meta.FindStatusCondition(g.Status.Conditions, reconcile.ConditionConfigDegraded) != nil {
			return "ConfigDegraded still set although the OperatorConfig exists"
		}
		return wantCondition(g.Status.Conditions, "Ready", metav1.ConditionFalse, reconcile.ReasonUnmanaged)
	})
	checkOperandsKept(t, c, uids)
	operandChecks++

	// 3. A valid config clears it within 10 s.
	setSpec(t, c, func(s *operatorv1alpha1.OperatorConfigSpec) { s.Guestbook.Namespace = "team-a" })
	start := time.Now()
	testenv.Eventually(t, 10*time.Second, func() string {
		oc := &operatorv1alpha1.OperatorConfig{}
		if err := c.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, oc); err != nil {
			return err.Error()
		}
		if msg := wantCondition(oc.Status.Conditions, operatorv1alpha1.ConditionDegraded, metav1.ConditionFalse, reconcile.ReasonAsExpected); msg != "" {
			return msg
		}
		if msg := wantCondition(oc.Status.Conditions, operatorv1alpha1.ConditionReady, metav1.ConditionTrue, reconcile.ReasonApplied); msg != "" {
			return msg
		}
		g := &webappv1.Guestbook{}
		if err := c.Get(ctx, client.ObjectKey{Name: "gb"}, g); err != nil {
			return err.Error()
		}
		if cond := meta.FindStatusCondition(g.Status.Conditions, "Ready"); cond == nil || cond.Reason == reconcile.ReasonUnmanaged {
			return fmt.Sprintf("Guestbook Ready %+v, want managed again", cond)
		}
		return ""
	})
	validAfter := time.Since(start)
	t.Logf("valid config in force after %s", validAfter.Round(time.Millisecond))
	checkOperandsKept(t, c, uids)
	operandChecks++

	// 4. Deleted and recreated by the bootstrap with an empty spec (the
	// default namespace "guestbook"): no operand moves, and the
	// OperatorConfig says why.
	deleteConfig(t, c)
	if err := bootstrap.CreateDefaultConfig(ctx, logr.Discard(), c); err != nil {
		t.Fatal(err)
	}
	waitConfig(t, c, "recreated config: namespace kept", func(oc *operatorv1alpha1.OperatorConfig) string {
		if msg := wantCondition(oc.Status.Conditions, operatorv1alpha1.ConditionDegraded, metav1.ConditionTrue, reconcile.ReasonConfigKept); msg != "" {
			return msg
		}
		if e := oc.Status.Effective; e == nil || e.GuestbookNamespace != "team-a" || e.Sources.GuestbookNamespace != operatorv1alpha1.SourceKept {
			return fmt.Sprintf("effective %+v, want the operands kept in team-a", e)
		}
		rec := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: opconfig.RecordName}, rec); err != nil {
			return err.Error()
		}
		if v, ok := rec.Annotations[reconcile.MissingSinceAnnotation]; ok {
			return "the record still says the OperatorConfig is missing since " + v
		}
		return ""
	})
	r.stop(t)
	r.start(t)
	restarts++
	waitGuestbook(t, c, "recreated config: managed in team-a", func(g *webappv1.Guestbook) string {
		if cond := meta.FindStatusCondition(g.Status.Conditions, "Ready"); cond == nil || cond.Reason == reconcile.ReasonUnmanaged {
			return fmt.Sprintf("Guestbook Ready %+v, want managed", cond)
		}
		return ""
	})
	checkOperandsKept(t, c, uids)
	operandChecks++
	err = c.Get(ctx, client.ObjectKey{Namespace: operatorv1alpha1.DefaultGuestbookNamespace, Name: "gb"}, &appsv1.StatefulSet{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("StatefulSet in the recreated config's namespace %q: %v, want none", operatorv1alpha1.DefaultGuestbookNamespace, err)
	}
	reliability.Save(t, map[string]any{
		"drinks":                   1,
		"guestbooks":               1,
		"operandsKept":             len(uids),
		"operandChecks":            operandChecks,
		"restarts":                 restarts,
		"drinkWritesDuringOutage":  drinkWrites,
		"drinkConfigMissingEvents": drinkEvents,
		"validConfigSeconds":       reliability.Seconds(validAfter),
	})
}

// operandUIDs waits for the Guestbook's StatefulSet and Service and returns
// their UIDs.
func operandUIDs(t *testing.T, c client.Client, ns, name string) map[string]types.UID {
	t.Helper()
	uids := map[string]types.UID{}
	testenv.Eventually(t, 30*time.Second, func() string {
		sts, svc := &appsv1.StatefulSet{}, &corev1.Service{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, sts); err != nil {
			return "StatefulSet: " + err.Error()
		}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
			return "Service: " + err.Error()
		}
		uids["statefulset/"+ns+"/"+name], uids["service/"+ns+"/"+name] = sts.UID, svc.UID
		return ""
	})
	return uids
}

func checkOperandsKept(t *testing.T, c client.Client, uids map[string]types.UID) {
	t.Helper()
	for key, uid := range uids {
		var obj client.Object = &appsv1.StatefulSet{}
		parts := strings.SplitN(key, "/", 3)
		kind, ns, name := parts[0], parts[1], parts[2]
		if kind == "service" {
			obj = &corev1.Service{}
		}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
			t.Fatalf("%s: %v (operand deleted)", key, err)
		}
		if obj.GetUID() != uid || !obj.GetDeletionTimestamp().IsZero() {
			t.Fatalf("%s: UID %s (deleting: %v), want %s kept", key, obj.GetUID(), !obj.GetDeletionTimestamp().IsZero(), uid)
		}
	}
}

func setSpec(t *testing.T, c client.Client, mutate func(*operatorv1alpha1.OperatorConfigSpec)) {
	t.Helper()
	oc := &operatorv1alpha1.OperatorConfig{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: operatorv1alpha1.SingletonName}, oc); err != nil {
		t.Fatal(err)
	}
	mutate(&oc.Spec)
	if err := c.Update(context.Background(), oc); err != nil {
		t.Fatal(err)
	}
}

func deleteConfig(t *testing.T, c client.Client) {
	t.Helper()
	oc := &operatorv1alpha1.OperatorConfig{ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName}}
	if err := c.Delete(context.Background(), oc); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, func() string {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(oc), oc); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("OperatorConfig still there: %v", err)
		}
		return ""
	})
}

func waitGuestbook(t *testing.T, c client.Client, what string, cond func(*webappv1.Guestbook) string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() string {
		g := &webappv1.Guestbook{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: "gb"}, g); err != nil {
			return err.Error()
		}
		if msg := cond(g); msg != "" {
			return what + ": " + msg
		}
		return ""
	})
}

func waitConfig(t *testing.T, c client.Client, what string, cond func(*operatorv1alpha1.OperatorConfig) string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() string {
		oc := &operatorv1alpha1.OperatorConfig{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: operatorv1alpha1.SingletonName}, oc); err != nil {
			return err.Error()
		}
		if msg := cond(oc); msg != "" {
			return what + ": " + msg
		}
		return ""
	})
}

func wantCondition(conds []metav1.Condition, typ string, status metav1.ConditionStatus, reason string) string {
	cond := meta.FindStatusCondition(conds, typ)
	if cond == nil || cond.Status != status || cond.Reason != reason {
		return fmt.Sprintf("condition %s is %+v, want %s/%s", typ, cond, status, reason)
	}
	return ""
}

// countEvents counts the events of ns about the object regarding with
// reason.
func countEvents(ctx context.Context, c client.Client, ns, regarding, reason string) (int, error) {
	evs := &eventsv1.EventList{}
	if err := c.List(ctx, evs, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	n := 0
	for _, e := range evs.Items {
		if e.Regarding.Name == regarding && e.Reason == reason {
			n++
		}
	}
	return n, nil
}

func wantEvent(ctx context.Context, c client.Client, ns, regarding, reason string) string {
	evs := &eventsv1.EventList{}
	if err := c.List(ctx, evs, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	for _, e := range evs.Items {
		if e.Regarding.Name == regarding && e.Reason == reason {
			return ""
		}
	}
	return fmt.Sprintf("no %s event about %s/%s", reason, ns, regarding)
}

package reconcile_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/scheme"
	"github.com/example/myoperator/reconcile"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/reliability"
)

// TestReconcilePanic: the Drink reconciler panics on one Drink (a fault
// injected into its client's reads of that Drink). With a single worker,
// every other Drink still converges; the panic is counted in
// controller_runtime_reconcile_panics_total and reported on that Drink by
// a ReconcilePanic Warning event; the manager keeps running. It uses an API
// server of its own: the suite's manager would reconcile the Drink without
// the fault.
func TestReconcilePanic(t *testing.T) {
	const ns, others, workers = "panic", 20, 1
	cfg, admin := ownAPIServer(t, ns)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	direct, err := client.NewWithWatch(cfg, client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		t.Fatal(err)
	}
	faulty := interceptor.NewClient(direct, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, drink := obj.(*drinksv1.Drink); drink && key.Name == "boom" {
				panic("injected fault: reading Drink boom")
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	skip := true
	if err := (&reconcile.DrinkReconciler{
		Client: faulty, APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("myoperator"), Namespace: operatorNS,
	}).SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: workers, SkipNameValidation: &skip}); err != nil {
		t.Fatal(err)
	}
	before := panics(t)
	testenv.RunManager(ctx, t, mgr)

	// The bad Drink first, so that the others queue behind its retries.
	names := []string{"boom"}
	for i := range others {
		names = append(names, fmt.Sprintf("fine-%02d", i))
	}
	for _, n := range names {
		d := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n,
			// No webhook here records the authored version.
			Annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: "v1"}},
			Spec: drinksv1.DrinkSpec{DisplayName: n, Beverage: "tea", Size: drinksv1.SizeSmall}}
		if err := admin.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	testenv.Eventually(t, 30*time.Second, func() string {
		for _, n := range names[1:] {
			d := &drinksv1.Drink{}
			if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, d); err != nil {
				return err.Error()
			}
			if !meta.IsStatusConditionTrue(d.Status.Conditions, drinksv1.ConditionReady) || d.Status.ObservedGeneration != d.Generation {
				return n + " not Ready at its generation"
			}
			if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, &corev1.ConfigMap{}); err != nil {
				return n + "'s ConfigMap: " + err.Error()
			}
		}
		return ""
	})
	converged := time.Since(start)
	var event eventsv1.Event
	testenv.Eventually(t, 10*time.Second, func() string {
		list := &eventsv1.EventList{}
		if err := admin.List(ctx, list, client.InNamespace(ns)); err != nil {
			return err.Error()
		}
		for _, e := range list.Items {
			if e.Regarding.Name == "boom" && e.Reason == reconcile.ReasonReconcilePanic && e.Type == corev1.EventTypeWarning {
				event = e
				return ""
			}
		}
		return "no ReconcilePanic event on Drink boom"
	})
	n := panics(t) - before
	if n < 1 {
		t.Errorf("controller_runtime_reconcile_panics_total{controller=drink} rose by %v, want at least 1", n)
	}
	t.Logf("%d other Drinks Ready in %s behind a Drink whose reconcile panicked %v times; event: %s", others,
		converged.Round(time.Millisecond), n, event.Note)
	reliability.Save(t, map[string]any{
		"workers":     workers,
		"otherDrinks": others,
		"readyMs":     converged.Round(time.Millisecond).Milliseconds(),
		"panics":      int(n),
	})
}

// panics reads controller-runtime's panic counter of the drink controller
// from the process's registry.
func panics(t *testing.T) float64 {
	t.Helper()
	return controllerMetric(t, "controller_runtime_reconcile_panics_total", "drink").GetCounter().GetValue()
}

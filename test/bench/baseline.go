package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
)

// LeaseName is the manager's leader election Lease (app.New).
const LeaseName = "myoperator.example.com"

// HoldLease takes the manager's Lease for an hour in the bench's name. A
// manager started with --leader-elect then serves its webhooks (they do not
// need the lease) but reconciles nothing: the baseline needs Drink creates
// to pass the real webhooks while the bench itself does the operator's
// writes.
func HoldLease(ctx context.Context, c client.Client) error {
	now := metav1.NewMicroTime(time.Now())
	return c.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: OperatorNamespace, Name: LeaseName},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("myoperator-bench"), LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime: &now, RenewTime: &now,
		},
	})
}

// Baseline makes, with a plain client and w workers, exactly the requests
// the operator makes for n Drinks: create the Drink (through the webhooks),
// read its ConfigMap once and create it as the operator's field owner, and
// merge-patch its status. It returns the time from the first create to
// the last write, and what the API server counted.
func Baseline(ctx context.Context, cp *ControlPlane, m *Manager, ns string, n, w int) (Phase, error) {
	before, err := takeSnapshot(ctx, cp, m)
	if err != nil {
		return Phase{}, err
	}
	load := runWorkers(ctx, w, upTo(n), func(ctx context.Context, i int) error {
		return writeAsOperator(ctx, cp, newDrink(ns, i))
	})
	if load.FirstErr != nil {
		return Phase{}, fmt.Errorf("baseline: %d of %d Drinks failed, first: %w", load.Errors, n, load.FirstErr)
	}
	after, err := takeSnapshot(ctx, cp, m)
	if err != nil {
		return Phase{}, err
	}
	return Phase{Seconds: load.Elapsed.Seconds(), Metrics: before.until(after)}, nil
}

// Quiet is admission latency with nothing else running: Drinks created one
// at a time, after a warm-up, while no reconcile runs.
type Quiet struct {
	Admission Admission
	// CreateP50 and CreateP99 are the whole create as the client timed it
	// (both webhooks, validation, etcd): an exact upper bound of the
	// admission time, which the API server's buckets cannot give.
	CreateP50, CreateP99 float64
}

// QuietCreates creates warm Drinks, then n more, one at a time, and times
// the n.
func QuietCreates(ctx context.Context, cp *ControlPlane, m *Manager, ns string, warm, n int) (Quiet, error) {
	var before snapshot
	load, err := warmThenTime(ctx, cp, ns, warm, n, func() (err error) {
		before, err = takeSnapshot(ctx, cp, m)
		return err
	})
	if err != nil {
		return Quiet{}, err
	}
	after, err := takeSnapshot(ctx, cp, m)
	if err != nil {
		return Quiet{}, err
	}
	lat := seconds(load.Latencies)
	return Quiet{Admission: before.until(after).Admission, CreateP50: Percentile(lat, 50), CreateP99: Percentile(lat, 99)}, nil
}

// warmThenTime creates warm Drinks one at a time, calls mark, then creates
// n more one at a time and returns their timings.
func warmThenTime(ctx context.Context, cp *ControlPlane, ns string, warm, n int, mark func() error) (Load, error) {
	create := func(ctx context.Context, i int) error { return cp.Client.Create(ctx, newDrink(ns, i)) }
	if load := runWorkers(ctx, 1, upTo(warm), create); load.FirstErr != nil {
		return Load{}, load.FirstErr
	}
	if err := mark(); err != nil {
		return Load{}, err
	}
	next := upTo(n)
	load := runWorkers(ctx, 1, func() (int, bool) { i, ok := next(); return warm + i, ok }, create)
	return load, load.FirstErr
}

// writeAsOperator is one Drink's share of the baseline.
func writeAsOperator(ctx context.Context, cp *ControlPlane, d *drinksv1.Drink) error {
	if err := cp.Client.Create(ctx, d); err != nil {
		return fmt.Errorf("creating Drink %s: %w", d.Name, err)
	}
	// The operator's cache holds no ConfigMap of a new Drink, so it reads
	// once from the API server (a free name or someone else's object?),
	// then creates it.
	cms := cp.Clientset.CoreV1().ConfigMaps(d.Namespace)
	switch _, err := cms.Get(ctx, d.Name, metav1.GetOptions{}); {
	case err == nil:
		return fmt.Errorf("ConfigMap %s exists before its Drink", d.Name)
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading ConfigMap %s: %w", d.Name, err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name,
			Labels:          map[string]string{managedByLabel: managedByValue, drinkLabel: d.Name},
			Annotations:     map[string]string{layoutAnnotation: "v1"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, drinksv1.GroupVersion.WithKind("Drink"))}},
		Data: wantData(d),
	}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: "myoperator"}); err != nil {
		return fmt.Errorf("creating ConfigMap %s: %w", d.Name, err)
	}
	status := drinksv1.DrinkStatus{
		ObservedGeneration: d.Generation, ConfigMapName: d.Name, AuthoredVersion: "v1",
		Conditions: []metav1.Condition{{
			Type: drinksv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "ConfigMapReady",
			Message: "ConfigMap " + d.Name + " holds the v1 layout of the current spec", ObservedGeneration: d.Generation,
			LastTransitionTime: metav1.Now(),
		}},
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	if err := cp.Client.Status().Patch(ctx, d, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("patching the status of Drink %s: %w", d.Name, err)
	}
	return nil
}

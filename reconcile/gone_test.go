package reconcile_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/scheme"
	"github.com/example/myoperator/reconcile"
	"github.com/example/myoperator/test/framework/testenv"
)

// TestNoRestoreForAGoneDrink: a Drink whose ConfigMap is missing is
// reconciled from a cache that still holds it after it was deleted (or
// replaced by a Drink of the same name): the ConfigMap is not restored, since
// a ConfigMap for a Drink that is gone is an orphan the garbage collector
// cannot remove once the CRD is gone too (an uninstall). A Drink that is
// still there gets its ConfigMap back. The API server is real; the stale
// cache is the fault, played by an interceptor that answers the Drink read
// with the copy taken before the delete.
func TestNoRestoreForAGoneDrink(t *testing.T) {
	const ns = "gone"
	cfg, admin := ownAPIServer(t, ns)
	ctx := context.Background()
	direct, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		then         func(t *testing.T, d *drinksv1.Drink) // what happens after the cache's copy was taken
		wantRestored bool
	}{
		{"deleted", func(t *testing.T, d *drinksv1.Drink) {
			if err := admin.Delete(ctx, d); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"deleted and created again under its name", func(t *testing.T, d *drinksv1.Drink) {
			if err := admin.Delete(ctx, d); err != nil {
				t.Fatal(err)
			}
			again := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: d.Name}, Spec: d.Spec}
			if err := admin.Create(ctx, again); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"still there", func(*testing.T, *drinksv1.Drink) {}, true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := []string{"deleted", "recreated", "there"}[i]
			d := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
				Annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: "v1"}},
				Spec: drinksv1.DrinkSpec{DisplayName: name, Beverage: "tea", Size: drinksv1.SizeSmall}}
			if err := admin.Create(ctx, d); err != nil {
				t.Fatal(err)
			}
			// Rendered before: its status names the ConfigMap, which is
			// now missing (the garbage collector took it, or a user).
			d.Status.ConfigMapName = name
			if err := admin.Status().Update(ctx, d); err != nil {
				t.Fatal(err)
			}
			stale := d.DeepCopy()
			tc.then(t, d)
			cached := interceptor.NewClient(direct, interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if got, ok := obj.(*drinksv1.Drink); ok && key.Name == name {
						stale.DeepCopyInto(got)
						return nil
					}
					return c.Get(ctx, key, obj, opts...)
				},
			})
			r := &reconcile.DrinkReconciler{Client: cached, APIReader: direct, Recorder: events.NewFakeRecorder(10), Namespace: operatorNS}
			if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			cm := &corev1.ConfigMap{}
			err := direct.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm)
			switch {
			case tc.wantRestored && err != nil:
				t.Errorf("the ConfigMap of a Drink that is still there was not restored: %v", err)
			case tc.wantRestored && (len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != stale.UID):
				t.Errorf("restored ConfigMap owned by %v, want the Drink %s", cm.OwnerReferences, stale.UID)
			case !tc.wantRestored && err == nil:
				t.Errorf("a ConfigMap was restored for the gone Drink %s (owners %v): an orphan", stale.UID, cm.OwnerReferences)
			case !tc.wantRestored && !apierrors.IsNotFound(err):
				t.Fatal(err)
			}
			t.Logf("%s: ConfigMap restored: %t", tc.name, err == nil)
		})
	}
}

// ownAPIServer starts an API server for one test, whose reconcilers the
// suite's manager must not run, with the operator's namespace, ns and the
// OperatorConfig in it.
func ownAPIServer(t *testing.T, ns string) (*rest.Config, client.Client) {
	t.Helper()
	_, cfg, admin := testenv.Start(t, testenv.Options{})
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNS}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&operatorv1alpha1.OperatorConfig{ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName}},
	} {
		if err := admin.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	return cfg, admin
}

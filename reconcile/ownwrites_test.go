package reconcile_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/scheme"
	"github.com/example/myoperator/reconcile"
)

// TestNoWriteFromACacheBehindOwnWrite: a Drink is reconciled once (its
// ConfigMap created, its status patched), then reconciled again from a
// cache that has not yet seen that status write, as when the ConfigMap's
// event arrives before the Drink's. The second reconcile sends nothing; it
// used to send the same status again, with the old resourceVersion, for
// the API server to refuse (409). Once the cache shows the write, a
// reconcile writes nothing because nothing changed, and after a user's
// edit it writes again. The API server is real; the lagging cache is
// played by an interceptor that answers the Drink read with a chosen copy.
func TestNoWriteFromACacheBehindOwnWrite(t *testing.T) {
	const ns, name = "ownwrites", "lagging"
	cfg, admin := ownAPIServer(t, ns)
	ctx := context.Background()
	direct, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns, Name: name}
	// No webhook runs here: the authored version is written as the
	// mutating webhook would.
	d := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: "v1"}},
		Spec: drinksv1.DrinkSpec{DisplayName: "Lagging", Beverage: "tea", Size: drinksv1.SizeSmall}}
	if err := admin.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		view   *drinksv1.Drink // what the cache holds
		writes []string        // every write sent
		failed []string        // those refused
	)
	note := func(verb string, err error) error {
		mu.Lock()
		defer mu.Unlock()
		writes = append(writes, verb)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", verb, err))
		}
		return err
	}
	cached := interceptor.NewClient(direct, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if got, ok := obj.(*drinksv1.Drink); ok && k == key {
				mu.Lock()
				defer mu.Unlock()
				view.DeepCopyInto(got)
				return nil
			}
			return c.Get(ctx, k, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return note("create "+obj.GetName(), c.Create(ctx, obj, opts...))
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return note("update "+obj.GetName(), c.Update(ctx, obj, opts...))
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			return note("patch "+obj.GetName(), c.Patch(ctx, obj, p, opts...))
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			return note("patch "+obj.GetName()+"/"+sub, c.SubResource(sub).Patch(ctx, obj, p, opts...))
		},
	})
	r := &reconcile.DrinkReconciler{Client: cached, APIReader: direct, Recorder: events.NewFakeRecorder(10), Namespace: operatorNS}
	live := func() *drinksv1.Drink {
		t.Helper()
		got := &drinksv1.Drink{}
		if err := admin.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	created := live()
	steps := []struct {
		name       string
		cache      func() *drinksv1.Drink
		wantWrites int
	}{
		{"first reconcile: ConfigMap and status", func() *drinksv1.Drink { return created }, 2},
		{"the cache still at the copy from before the status write", func() *drinksv1.Drink { return created }, 0},
		{"the cache caught up", live, 0},
		{"a user's edit", func() *drinksv1.Drink {
			d := live()
			d.Spec.DisplayName = "Edited"
			if err := admin.Update(ctx, d); err != nil {
				t.Fatal(err)
			}
			return live()
		}, 2},
	}
	for _, s := range steps {
		mu.Lock()
		view = s.cache()
		writes, failed = nil, nil
		mu.Unlock()
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatalf("%s: reconcile: %v", s.name, err)
		}
		mu.Lock()
		got, refused := writes, failed
		mu.Unlock()
		t.Logf("%s: %d writes %v", s.name, len(got), got)
		if len(got) != s.wantWrites {
			t.Errorf("%s: %d writes %v, want %d", s.name, len(got), got, s.wantWrites)
		}
		if len(refused) > 0 {
			t.Errorf("%s: refused writes %v", s.name, refused)
		}
	}
	final := live()
	if c := meta.FindStatusCondition(final.Status.Conditions, drinksv1.ConditionReady); c == nil ||
		c.Status != metav1.ConditionTrue || c.ObservedGeneration != final.Generation {
		t.Errorf("the Drink is not Ready at its generation %d: %+v", final.Generation, c)
	}
}

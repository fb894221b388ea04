package shard

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
)

// TestShareCacheReducesDropped: the cache of a share passes its Drinks and
// ConfigMaps through Served.IdentityOfDropped, so that once a bucket is
// dropped what the cache goes on receiving of it is kept by name only,
// while the buckets kept are cached whole. Built with the bare trims, the
// dropped bucket's Drink keeps its spec.
func TestShareCacheReducesDropped(t *testing.T) {
	const kept, dropped = 3, 7
	served := NewServed([]int{kept, dropped})
	opts, err := shareCacheOptions(Options{ConfigMaps: labels.Everything()}, served, func() {})
	if err != nil {
		t.Fatal(err)
	}
	served.Drop([]int{dropped})()
	transform := func(obj client.Object) any {
		for o, by := range opts.ByObject {
			if _, same := o.(*drinksv1.Drink); same == isDrink(obj) {
				if by.Transform == nil {
					return obj
				}
				got, err := by.Transform(obj)
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
		}
		t.Fatalf("no cache options for %T", obj)
		return nil
	}
	for _, tc := range []struct {
		name      string
		bucket    int
		wantWhole bool
	}{
		{"kept", kept, true},
		{"dropped", dropped, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := transform(&drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Name: "d", UID: UIDIn(tc.bucket)},
				Spec: drinksv1.DrinkSpec{Beverage: "tea"}}).(*drinksv1.Drink)
			if whole := d.Spec.Beverage == "tea"; whole != tc.wantWhole {
				t.Errorf("Drink cached whole: %v, want %v", whole, tc.wantWhole)
			}
			cm := transform(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "d",
				Labels: map[string]string{BucketLabel: BucketValue(tc.bucket)}}, Data: map[string]string{"beverage": "tea"}}).(*corev1.ConfigMap)
			if whole := cm.Data["beverage"] == "tea"; whole != tc.wantWhole {
				t.Errorf("ConfigMap cached whole: %v, want %v", whole, tc.wantWhole)
			}
		})
	}
}

func isDrink(obj client.Object) bool {
	_, ok := obj.(*drinksv1.Drink)
	return ok
}

// TestShareListsThenWatches: a share's informers list, then watch from the
// list's resourceVersion; they never ask for a watch that streams the
// objects first, which the API server closes when its events come faster
// than the stream drains (bucketcache.go: listThenWatch). The Drinks'
// list carries the shard selector, the ConfigMaps' does not. Built with
// the bare ListerWatcher, the first request is such a watch.
func TestShareListsThenWatches(t *testing.T) {
	served := NewServed([]int{3})
	opts, err := shareCacheOptions(Options{ConfigMaps: labels.Everything()}, served, func() {})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		obj          runtime.Object
		list         runtime.Object
		wantSelector bool
	}{
		{"Drinks", &drinksv1.Drink{}, &drinksv1.DrinkList{}, true},
		{"ConfigMaps", &corev1.ConfigMap{}, &corev1.ConfigMapList{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var calls []string
			record := func(kind string, opts metav1.ListOptions) {
				mu.Lock()
				defer mu.Unlock()
				call := kind
				if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
					call += " streaming the objects first"
				}
				if opts.ShardSelector != "" {
					call += " by shard"
				}
				calls = append(calls, call)
			}
			lw := &toolscache.ListWatch{
				ListWithContextFunc: func(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
					record("list", opts)
					l := tc.list.DeepCopyObject()
					l.(metav1.ListInterface).SetResourceVersion("1")
					return l, nil
				},
				WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
					record("watch", opts)
					if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
						return nil, errors.New("no streaming here")
					}
					return watch.NewFake(), nil
				},
			}
			inf := opts.NewInformer(lw, tc.obj, 0, toolscache.Indexers{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go inf.RunWithContext(ctx)
			if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				t.Fatal("the informer did not sync")
			}
			mu.Lock()
			defer mu.Unlock()
			want := "list"
			if tc.wantSelector {
				want += " by shard"
			}
			if len(calls) == 0 || calls[0] != want {
				t.Errorf("requests %q, want the first to be %q", calls, want)
			}
			for _, c := range calls {
				if strings.Contains(c, "streaming") {
					t.Errorf("requests %q: a watch that streams the objects first", calls)
				}
			}
		})
	}
}

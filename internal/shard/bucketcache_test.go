package shard_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/scheme"
	"github.com/example/myoperator/internal/shard"
	"github.com/example/myoperator/test/framework/testenv"
)

// TestFillBucketCacheLists: when fillBucketCache returns, the bucket's
// Drink and ConfigMap informers have both listed, so that the lists are
// made in the bucket's turn and the controller started after it lists
// nothing. A cache whose informers were left to the controller's start
// reports itself synced with nothing listed.
func TestFillBucketCacheLists(t *testing.T) {
	_, cfg, c := testenv.Start(t, testenv.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	const ns = "fill"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		d := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("d-%d", i)},
			Spec: drinksv1.DrinkSpec{DisplayName: "x", Beverage: "tea"}}
		if err := c.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	share, err := cache.New(cfg, cache.Options{Scheme: scheme.New(), DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var stopErrs []error
	if !shard.FillBucketCache(ctx, share, &wg, func(err error) { mu.Lock(); stopErrs = append(stopErrs, err); mu.Unlock() }) {
		t.Fatal("fillBucketCache: the cache did not sync")
	}
	for _, obj := range []client.Object{&drinksv1.Drink{}, &corev1.ConfigMap{}} {
		inf, err := share.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			t.Fatal(err)
		}
		if !inf.HasSynced() {
			t.Errorf("the %T informer had not listed when fillBucketCache returned", obj)
		}
	}
	// The Drinks are there without another list.
	held := &drinksv1.DrinkList{}
	if err := share.List(ctx, held); err != nil {
		t.Fatal(err)
	}
	if len(held.Items) != 3 {
		t.Errorf("the bucket's cache holds %d Drinks, want 3", len(held.Items))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(stopErrs) > 0 {
		t.Errorf("the cache stopped: %v", stopErrs)
	}
}

// TestBucketCacheWithoutTheGate: an API server without ShardedListAndWatch
// ignores a bucket cache's selector and sends every Drink; the cache still
// holds only the bucket's, from its first list and from its watch, and
// every Drink dropped is counted.
func TestBucketCacheWithoutTheGate(t *testing.T) {
	_, cfg, c := testenv.Start(t, testenv.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ns = "bucket"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	create := func(from, to int) {
		for i := from; i < to; i++ {
			d := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("d-%03d", i)},
				Spec: drinksv1.DrinkSpec{DisplayName: "x", Beverage: "tea"}}
			if err := c.Create(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
	}
	create(0, 64)
	// Of 16 buckets, a quarter of the Drinks on average: some in, some out.
	buckets := []int{0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60}
	m := shard.NewMatcher(buckets)
	var outside atomic.Int64
	share, err := cache.New(cfg, cache.Options{Scheme: scheme.New(), DefaultNamespaces: map[string]cache.Config{ns: {}},
		NewInformer: func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
			return toolscache.NewSharedIndexInformer(shard.WithShardSelector(lw, shard.Selector(buckets), m, func() { outside.Add(1) }), obj, resync, idx)
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := share.GetInformer(ctx, &drinksv1.Drink{}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = share.Start(ctx) }()
	if !share.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	create(64, 128)
	testenv.Eventually(t, 30*time.Second, func() string {
		all := &drinksv1.DrinkList{}
		if err := c.List(ctx, all); err != nil {
			return err.Error()
		}
		want := 0
		for i := range all.Items {
			if ok, _ := m.Matches(&all.Items[i]); ok {
				want++
			}
		}
		held := &drinksv1.DrinkList{}
		if err := share.List(ctx, held); err != nil {
			return err.Error()
		}
		for i := range held.Items {
			if ok, _ := m.Matches(&held.Items[i]); !ok {
				return fmt.Sprintf("the cache holds %s, outside its buckets", held.Items[i].Name)
			}
		}
		if len(held.Items) != want {
			return fmt.Sprintf("the cache holds %d Drinks, want the %d of its buckets", len(held.Items), want)
		}
		if got := outside.Load(); got < int64(len(all.Items)-want) {
			return fmt.Sprintf("%d Drinks counted as sent outside the buckets, want at least %d", got, len(all.Items)-want)
		}
		return ""
	})
}

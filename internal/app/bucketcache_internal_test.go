package app

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/scheme"
)

// TestFillBucketCacheLists: when fillBucketCache returns, the bucket's
// Drink and ConfigMap informers have both listed, so that the lists are
// made in the bucket's turn and the controller started after it lists
// nothing. A cache whose informers were left to the controller's start
// reports itself synced with nothing listed.
func TestFillBucketCacheLists(t *testing.T) {
	cfg, c := crdAPIServer(t)
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
	if !fillBucketCache(ctx, share, &wg, func(err error) { mu.Lock(); stopErrs = append(stopErrs, err); mu.Unlock() }) {
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

// crdAPIServer starts an API server with the project's CRDs for one test,
// with envtest directly (test/framework/testenv imports this package), and
// an administrator's client of it.
func crdAPIServer(t *testing.T) (*rest.Config, client.Client) {
	t.Helper()
	env := &envtest.Environment{CRDDirectoryPaths: []string{"../../config/crd/bases"}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, c
}

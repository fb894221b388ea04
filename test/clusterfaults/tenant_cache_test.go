package clusterfaults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/test/bench"
	"github.com/example/myoperator/test/reliability"
)

const (
	// tenantConfigMaps ConfigMaps of tenantConfigMapBytes each, labelled
	// as the operator's, and tenantDrinks Drinks with tenantAnnotationBytes
	// of annotations each, all in one tenant namespace: what anyone with
	// the rights to create ConfigMaps and Drinks there can make.
	tenantConfigMaps      = 200
	tenantConfigMapBytes  = 512 << 10
	tenantDrinks          = 200
	tenantAnnotationBytes = 200 << 10
	// tenantHeapBudget bounds the growth of the manager's heap.
	tenantHeapBudget = 10 << 20
)

// TestTenantCannotFillCache: a tenant who may create ConfigMaps and Drinks
// in one namespace makes 200 ConfigMaps of 512 KiB labelled
// app.kubernetes.io/managed-by=myoperator (which the manager's cache
// selects) and 200 Drinks with 200 KiB of annotations each: 140 MiB of
// objects the manager watches. Its heap in use after a forced GC grows by
// less than 10 MiB: the cache keeps a foreign labelled ConfigMap's
// identity only, and of a Drink only what the reconciler reads
// (reconcile.TrimConfigMap, reconcile.TrimDrink). The Drinks still
// converge.
func TestTenantCannotFillCache(t *testing.T) {
	if os.Getenv(longFaultsEnv) != "1" {
		t.Skipf("takes about a minute; run with %s=1", longFaultsEnv)
	}
	began := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p := startPlane(ctx, t, bench.PlaneOptions{}, false)
	const ns = "tenant"
	if err := p.cp.CreateNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	opts := p.opts
	opts.LogFile = filepath.Join(p.dir, "manager.log")
	m, err := bench.StartReady(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	if _, err := settle(ctx, m); err != nil {
		t.Fatal(err)
	}
	before, err := m.MeasureMemory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	createTenantObjects(ctx, t, p.cp, ns)
	t.Logf("created %d ConfigMaps of %d KiB and %d Drinks with %d KiB of annotations in %.1fs",
		tenantConfigMaps, tenantConfigMapBytes>>10, tenantDrinks, tenantAnnotationBytes>>10, time.Since(created).Seconds())
	// Every Drink converges: its ConfigMap is written and its status Ready.
	deadline := time.Now().Add(2 * time.Minute)
	ready := 0
	for {
		list := &drinksv1.DrinkList{}
		if err := p.cp.Client.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		ready = 0
		for _, d := range list.Items {
			for _, c := range d.Status.Conditions {
				if c.Type == drinksv1.ConditionReady && c.Status == metav1.ConditionTrue && c.ObservedGeneration == d.Generation {
					ready++
				}
			}
		}
		if ready == tenantDrinks {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d Drinks Ready after 2 minutes", ready, tenantDrinks)
		}
		time.Sleep(time.Second)
	}
	if _, err := settle(ctx, m); err != nil {
		t.Fatal(err)
	}
	after, err := m.MeasureMemory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	growth := after.HeapInuse - before.HeapInuse
	t.Logf("heap in use after a forced GC: %.1f MiB before, %.1f MiB after (%+.1f MiB); RSS %.1f MiB, %.1f MiB",
		before.HeapInuse/mib, after.HeapInuse/mib, growth/mib, before.RSS/mib, after.RSS/mib)
	if growth > tenantHeapBudget {
		t.Errorf("the manager's heap grew by %.1f MiB for %d MiB of a tenant's objects, want less than %d MiB",
			growth/mib, (tenantConfigMaps*tenantConfigMapBytes+tenantDrinks*tenantAnnotationBytes)>>20, tenantHeapBudget>>20)
	}
	reliability.Save(t, map[string]any{
		"configMaps":         tenantConfigMaps,
		"configMapKiB":       tenantConfigMapBytes >> 10,
		"drinks":             tenantDrinks,
		"annotationKiB":      tenantAnnotationBytes >> 10,
		"objectsMiB":         (tenantConfigMaps*tenantConfigMapBytes + tenantDrinks*tenantAnnotationBytes) >> 20,
		"readyDrinks":        ready,
		"heapBeforeMiB":      round1(before.HeapInuse / mib),
		"heapAfterMiB":       round1(after.HeapInuse / mib),
		"heapGrowthMiB":      round1(growth / mib),
		"heapGrowthLimitMiB": tenantHeapBudget >> 20,
		"testSeconds":        reliability.Seconds(time.Since(began)),
	}, longFaultsEnv, managerBinaryEnv)
}

func createTenantObjects(ctx context.Context, t *testing.T, cp *bench.ControlPlane, ns string) {
	t.Helper()
	value := strings.Repeat("x", tenantConfigMapBytes-1024)
	note := strings.Repeat("y", tenantAnnotationBytes-1024)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	work := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range work {
				var err error
				if i < tenantConfigMaps {
					_, err = cp.Clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
						ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("big-%03d", i),
							Labels: map[string]string{names.ManagedByLabel: names.ManagedByValue}},
						Data: map[string]string{"blob": value},
					}, metav1.CreateOptions{})
				} else {
					err = cp.Client.Create(ctx, &drinksv1.Drink{
						ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("noted-%03d", i-tenantConfigMaps),
							Annotations: map[string]string{"example.org/note": note}},
						Spec: drinksv1.DrinkSpec{DisplayName: "Tea", Beverage: "tea"},
					})
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range tenantConfigMaps + tenantDrinks {
		work <- i
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
}

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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/test/bench"
	"github.com/example/myoperator/test/reliability"
)

const (
	// Each of the tenant's objects, in one tenant namespace, is what
	// anyone with the rights to create ConfigMaps and Drinks there can
	// make: ConfigMaps of tenantConfigMapBytes labelled as the operator's,
	// Drinks with tenantAnnotationBytes of annotations, and ConfigMaps
	// labelled as a Drink's with a layout annotation of tenantLayoutBytes,
	// each one distinct.
	tenantConfigMapBytes  = 512 << 10
	tenantAnnotationBytes = 200 << 10
	tenantLayoutBytes     = 250 << 10
)

// tenantLoad is how many objects of each kind the tenant makes, and how
// much the manager's heap may grow for them.
type tenantLoad struct {
	objects    int
	heapBudget float64
}

var (
	// longTenantLoad: the long form (MYOPERATOR_LONG_FAULTS=1), whose
	// figures docs/RELIABILITY.md reports.
	longTenantLoad = tenantLoad{objects: 200, heapBudget: 10 << 20}
	// shortTenantLoad: the form make test runs. Its budget is twice the
	// long form's share, for a heap that varies from one run to the next,
	// and less than half of the 30 layout annotations (7.3 MiB) that the
	// manager kept before their trim and the intern table's bounds.
	shortTenantLoad = tenantLoad{objects: 30, heapBudget: 3 << 20}
)

// TestTenantCannotFillCache: a tenant who may create ConfigMaps and Drinks
// in one namespace makes 200 ConfigMaps of 512 KiB labelled
// app.kubernetes.io/managed-by=myoperator (which the manager's cache
// selects), 200 Drinks with 200 KiB of annotations each, and 200
// ConfigMaps labelled as Drinks' (managed-by and example.com/drink) each
// with a distinct layout annotation of 250 KiB: 188 MiB of objects the
// manager watches. Its heap in use after a forced GC grows by less than
// 10 MiB: the cache keeps a foreign labelled ConfigMap's identity only, of
// one labelled as a Drink's a layout only when it is one the operator
// writes, and of a Drink only what the reconciler reads
// (reconcile.TrimConfigMap, reconcile.TrimDrink). The
// Drinks still converge. Once the tenant deletes every object and the
// manager has settled, its heap is back within 10 MiB of where it began:
// nothing of the deleted objects stays, as the intern table kept their
// layouts before it was bounded. The heap before is measured once the
// manager has served one object of each kind and they are gone. Without
// MYOPERATOR_LONG_FAULTS=1 (in make test) the tenant makes 30 objects of
// each kind, against 3 MiB; only the long form records its figures.
func TestTenantCannotFillCache(t *testing.T) {
	long := os.Getenv(longFaultsEnv) == "1"
	load := shortTenantLoad
	if long {
		load = longTenantLoad
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
	// The baseline is the manager that has served one object of each
	// kind: what it builds once, whatever the number (the webhook's
	// validators, a watch's decoding buffer as large as the largest
	// object), is not what the tenant's objects cost.
	createTenantObjects(ctx, t, p.cp, ns, 1)
	waitReady(ctx, t, p.cp, 1)
	deleteTenantObjects(ctx, t, p.cp, ns)
	if _, err := settle(ctx, m); err != nil {
		t.Fatal(err)
	}
	before, err := leastHeap(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	createTenantObjects(ctx, t, p.cp, ns, load.objects)
	objectsMiB := load.objects * (tenantConfigMapBytes + tenantAnnotationBytes + tenantLayoutBytes) >> 20
	t.Logf("created %d ConfigMaps of %d KiB, %d Drinks with %d KiB of annotations and %d Drinks' ConfigMaps with layouts of %d KiB (%d MiB) in %.1fs",
		load.objects, tenantConfigMapBytes>>10, load.objects, tenantAnnotationBytes>>10, load.objects, tenantLayoutBytes>>10,
		objectsMiB, time.Since(created).Seconds())
	// Every Drink converges: its ConfigMap is written and its status Ready.
	ready := waitReady(ctx, t, p.cp, load.objects)
	if _, err := settle(ctx, m); err != nil {
		t.Fatal(err)
	}
	after, err := leastHeap(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	growth := after.HeapInuse - before.HeapInuse
	t.Logf("heap in use after a forced GC (least of 3): %.1f MiB before, %.1f MiB after (%+.1f MiB); RSS %.1f MiB, %.1f MiB",
		before.HeapInuse/mib, after.HeapInuse/mib, growth/mib, before.RSS/mib, after.RSS/mib)
	if growth > load.heapBudget {
		t.Errorf("the manager's heap grew by %.1f MiB for %d MiB of a tenant's objects, want less than %.1f MiB",
			growth/mib, objectsMiB, load.heapBudget/mib)
	}

	deleteTenantObjects(ctx, t, p.cp, ns)
	if _, err := settle(ctx, m); err != nil {
		t.Fatal(err)
	}
	deleted, err := leastHeap(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	left := deleted.HeapInuse - before.HeapInuse
	t.Logf("heap in use after a forced GC once the tenant's objects are deleted: %.1f MiB (%+.1f MiB from before them); RSS %.1f MiB",
		deleted.HeapInuse/mib, left/mib, deleted.RSS/mib)
	if left > load.heapBudget {
		t.Errorf("with the tenant's objects deleted, the manager's heap is %.1f MiB above where it began, want less than %.1f MiB",
			left/mib, load.heapBudget/mib)
	}
	if !long {
		// docs/RELIABILITY.md reports the long form, by the latest
		// record: a short run's figures would be taken for one.
		return
	}
	reliability.Save(t, map[string]any{
		"configMaps":               load.objects,
		"configMapKiB":             tenantConfigMapBytes >> 10,
		"drinks":                   load.objects,
		"annotationKiB":            tenantAnnotationBytes >> 10,
		"layoutConfigMaps":         load.objects,
		"layoutKiB":                tenantLayoutBytes >> 10,
		"objectsMiB":               objectsMiB,
		"readyDrinks":              ready,
		"heapBeforeMiB":            round1(before.HeapInuse / mib),
		"heapAfterMiB":             round1(after.HeapInuse / mib),
		"heapGrowthMiB":            round1(growth / mib),
		"heapAfterDeletionMiB":     round1(deleted.HeapInuse / mib),
		"heapLeftAfterDeletionMiB": round1(left / mib),
		"heapGrowthLimitMiB":       round1(load.heapBudget / mib),
		"testSeconds":              reliability.Seconds(time.Since(began)),
	}, longFaultsEnv, managerBinaryEnv)
}

// leastHeap is the manager's memory after a forced GC with the least heap
// in use of three measurements a second apart: what a request in flight
// allocates between the collection and the reading is not the cache's.
func leastHeap(ctx context.Context, m *bench.Manager) (bench.Memory, error) {
	var least bench.Memory
	for i := range 3 {
		if i > 0 {
			time.Sleep(time.Second)
		}
		mem, err := m.MeasureMemory(ctx)
		if err != nil {
			return bench.Memory{}, err
		}
		if i == 0 || mem.HeapInuse < least.HeapInuse {
			least = mem
		}
	}
	return least, nil
}

// waitReady waits until n Drinks are Ready at their generation, at most
// 2 minutes, and returns how many are.
func waitReady(ctx context.Context, t *testing.T, cp *bench.ControlPlane, n int) int {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		list := &drinksv1.DrinkList{}
		if err := cp.Client.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		ready := 0
		for _, d := range list.Items {
			for _, c := range d.Status.Conditions {
				if c.Type == drinksv1.ConditionReady && c.Status == metav1.ConditionTrue && c.ObservedGeneration == d.Generation {
					ready++
				}
			}
		}
		if ready == n {
			return ready
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d Drinks Ready after 2 minutes", ready, n)
		}
		time.Sleep(time.Second)
	}
}

// createTenantObjects makes n objects of each of the tenant's kinds in ns.
func createTenantObjects(ctx context.Context, t *testing.T, cp *bench.ControlPlane, ns string, n int) {
	t.Helper()
	value := strings.Repeat("x", tenantConfigMapBytes-1024)
	note := strings.Repeat("y", tenantAnnotationBytes-1024)
	layout := strings.Repeat("l", tenantLayoutBytes-1024)
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
				switch kind, j := i%3, i/3; kind {
				case 0:
					_, err = cp.Clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
						ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("big-%03d", j),
							Labels: map[string]string{names.ManagedByLabel: names.ManagedByValue}},
						Data: map[string]string{"blob": value},
					}, metav1.CreateOptions{})
				case 1:
					err = cp.Client.Create(ctx, &drinksv1.Drink{
						ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("noted-%03d", j),
							Annotations: map[string]string{"example.org/note": note}},
						Spec: drinksv1.DrinkSpec{DisplayName: "Tea", Beverage: "tea"},
					})
				default:
					// Labelled as a Drink's, for a Drink that does not exist,
					// with a layout no other object has.
					name := fmt.Sprintf("layout-%03d", j)
					_, err = cp.Clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
						ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
							Labels:      map[string]string{names.ManagedByLabel: names.ManagedByValue, names.DrinkLabel: name},
							Annotations: map[string]string{names.LayoutAnnotation: layout + name}},
						Data: map[string]string{"beverage": "tea"},
					}, metav1.CreateOptions{})
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
	for i := range 3 * n {
		work <- i
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
}

// deleteTenantObjects deletes every Drink and then every ConfigMap in ns
// (the Drinks' own too: the test's control plane runs no garbage
// collector), and waits until the API server lists none. The Drinks go
// first, so that the operator restores no ConfigMap of a Drink that
// remains.
func deleteTenantObjects(ctx context.Context, t *testing.T, cp *bench.ControlPlane, ns string) {
	t.Helper()
	for _, kind := range []struct {
		obj  client.Object
		list client.ObjectList
	}{
		{&drinksv1.Drink{}, &drinksv1.DrinkList{}},
		{&corev1.ConfigMap{}, &corev1.ConfigMapList{}},
	} {
		if err := cp.Client.DeleteAllOf(ctx, kind.obj, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			if err := cp.Client.List(ctx, kind.list, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			if meta.LenList(kind.list) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%T: %d left in %s a minute after the deletion", kind.obj, meta.LenList(kind.list), ns)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
}

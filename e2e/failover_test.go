//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/test/framework/testenv"
)

const (
	loadNS     = "e2e-load"
	loadDrinks = 500
	// killAfter Drinks are created before the leader is killed; the rest
	// are created while the Lease is orphaned.
	killAfter    = 150
	loadWorkers  = 8
	loadDeadline = 4 * time.Minute
	// createRetryWindow is how long a create refused because of the kill
	// is retried.
	createRetryWindow = 30 * time.Second
)

// readyDrink reports whether the Drink is reconciled: Ready=True for the
// current generation.
func readyDrink(d *drinksv1.Drink) bool {
	c := meta.FindStatusCondition(d.Status.Conditions, "Ready")
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == d.Generation && d.Status.ObservedGeneration == d.Generation
}

// leaderFailoverUnderLoad: while 500 Drinks are being created, the
// leader's manager container gets SIGKILL (no Lease release; on a cluster
// the suite did not create, whose pods it does not run, its pod is deleted
// with --grace-period=0 --force instead); another manager takes the Lease
// and every Drink converges with exactly one ConfigMap, none orphaned. The
// time from the kill to the Lease changing hands and to the first
// reconcile by the new leader is measured and printed.
func leaderFailoverUnderLoad() features.Feature {
	return features.New("leader failover under load").WithLabel("area", "failover").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if out, err := kubectl(cfg, "create", "namespace", loadNS); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			return ctx
		}).
		Assess(killMethod()+" while creating 500 Drinks; all converge", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			start := time.Now()
			readyAt := watchReady(ctx, t)
			lease, err := leaseOf(ctx)
			if err != nil || holderPod(lease) == "" {
				t.Fatalf("no leader before the kill: %v", err)
			}
			oldLeader, oldIdentity := holderPod(lease), *lease.Spec.HolderIdentity
			var killAt time.Time
			retries := createDrinks(ctx, t, loadDrinks, loadWorkers, func(created int) {
				if created == killAfter {
					killAt = time.Now()
					if err := killLeader(cfg, oldLeader); err != nil {
						t.Errorf("kill %s: %v", oldLeader, err)
					}
				}
			})
			createdAt := time.Now()
			if killAt.IsZero() {
				t.Fatal("the leader was never killed")
			}
			newLeader, acquired := waitNewLeader(ctx, t, oldIdentity)
			converged := waitConverged(ctx, t)
			first := firstReadyAfter(readyAt, acquired)
			fmt.Printf("e2e: leader failover: %s (%s) at +%s; %s took the Lease %s after the kill; first reconcile by the new leader %s after the kill; %d Drinks created in %s (%d create retries), all converged %s after the start\n",
				killMethod(), oldLeader, killAt.Sub(start).Round(time.Millisecond), newLeader, acquired.Sub(killAt).Round(time.Millisecond),
				first.Sub(killAt).Round(time.Millisecond), loadDrinks, createdAt.Sub(start).Round(time.Millisecond), retries, converged.Sub(start).Round(time.Millisecond))
			if first.IsZero() {
				t.Error("no Drink became ready after the new leader took the Lease")
			}
			return ctx
		}).
		Assess("one ConfigMap per Drink, none missing, duplicated or orphaned", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			checkConfigMaps(ctx, t)
			return ctx
		}).
		Assess("the killed replica is back as a standby", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := waitOperatorReady(ctx, 2*time.Minute); err != nil {
				t.Error(err)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cleanUp(t, cfg, "namespace", loadNS)
			return ctx
		}).
		Feature()
}

// createDrinks creates n v1 Drinks with the given number of workers and
// calls after with the running count after each create. A create that
// fails because the webhook pod it reached was just killed is retried, as
// a user would; AlreadyExists then means the first try went through.
func createDrinks(ctx context.Context, t *testing.T, n, workers int, after func(created int)) (retries int) {
	t.Helper()
	var mu sync.Mutex
	created := 0
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				d := &drinksv1.Drink{
					ObjectMeta: metav1.ObjectMeta{Namespace: loadNS, Name: "load-" + strconv.Itoa(i)},
					Spec:       drinksv1.DrinkSpec{DisplayName: "Load " + strconv.Itoa(i), Beverage: "tea", Size: "Small", SugarCubes: int32(i % 5)},
				}
				// Until the pod runner sees the killed container's probe
				// fail, the webhook stand-in may still send calls to it, and
				// the restart takes seconds, more than 10 retries 200 ms
				// apart cover on a loaded machine; a user retries for longer.
				deadline := time.Now().Add(createRetryWindow)
				for attempt := 0; ; attempt++ {
					err := kc.Create(ctx, d.DeepCopy())
					if err == nil || (attempt > 0 && apierrors.IsAlreadyExists(err)) {
						break
					}
					if time.Now().After(deadline) {
						t.Errorf("create %s: still failing after %s (%d attempts): %v", d.Name, createRetryWindow, attempt+1, err)
						break
					}
					mu.Lock()
					retries++
					mu.Unlock()
					time.Sleep(200 * time.Millisecond)
				}
				mu.Lock()
				created++
				c := created
				mu.Unlock()
				after(c)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return retries
}

// watchReady records when each Drink of loadNS is first seen ready.
func watchReady(ctx context.Context, t *testing.T) *sync.Map {
	t.Helper()
	wc, err := client.NewWithWatch(restConfig, client.Options{Scheme: kc.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(ctx, &drinksv1.DrinkList{}, client.InNamespace(loadNS))
	if err != nil {
		t.Fatal(err)
	}
	readyAt := &sync.Map{}
	go func() {
		for ev := range w.ResultChan() {
			if d, ok := ev.Object.(*drinksv1.Drink); ok && ev.Type != watch.Deleted && readyDrink(d) {
				readyAt.LoadOrStore(d.Name, time.Now())
			}
		}
	}()
	t.Cleanup(w.Stop)
	return readyAt
}

// waitNewLeader waits until another manager process than the one whose
// holder identity (pod name and a per-process UUID) was old holds the Lease,
// and returns its pod with its acquire time (set by the new leader,
// microsecond precision). The killed pod's container is restarted within a
// second and may win the Lease itself: a new process in the same pod is a
// new leader too.
func waitNewLeader(ctx context.Context, t *testing.T, old string) (string, time.Time) {
	t.Helper()
	var holder string
	var acquired time.Time
	testenv.Eventually(t, 90*time.Second, func() string {
		l, err := leaseOf(ctx)
		if err != nil {
			return err.Error()
		}
		// Holder and acquire time from the same read of the Lease.
		holder = holderPod(l)
		if holder == "" || *l.Spec.HolderIdentity == old || l.Spec.AcquireTime == nil {
			return "the Lease is still held by the killed process " + old
		}
		acquired = l.Spec.AcquireTime.Time
		return ""
	})
	return holder, acquired
}

// firstReadyAfter is the earliest time a Drink was seen ready after t0.
func firstReadyAfter(readyAt *sync.Map, t0 time.Time) time.Time {
	var first time.Time
	readyAt.Range(func(_, v any) bool {
		if at := v.(time.Time); at.After(t0) && (first.IsZero() || at.Before(first)) {
			first = at
		}
		return true
	})
	return first
}

// waitConverged waits until every Drink of loadNS is ready and returns
// when that was first seen.
func waitConverged(ctx context.Context, t *testing.T) time.Time {
	t.Helper()
	testenv.Eventually(t, loadDeadline, func() string {
		list := &drinksv1.DrinkList{}
		if err := kc.List(ctx, list, client.InNamespace(loadNS)); err != nil {
			return err.Error()
		}
		ready := 0
		for i := range list.Items {
			if readyDrink(&list.Items[i]) {
				ready++
			}
		}
		if len(list.Items) != loadDrinks || ready != loadDrinks {
			return fmt.Sprintf("%d of %d Drinks ready (%d exist)", ready, loadDrinks, len(list.Items))
		}
		return ""
	})
	return time.Now()
}

// checkConfigMaps: every Drink of loadNS has exactly one ConfigMap, which
// the Drink controls and which holds the Drink's v1 layout; no ConfigMap
// belongs to a Drink that does not exist.
func checkConfigMaps(ctx context.Context, t *testing.T) {
	t.Helper()
	drinks := &drinksv1.DrinkList{}
	if err := kc.List(ctx, drinks, client.InNamespace(loadNS)); err != nil {
		t.Fatal(err)
	}
	byUID := map[string]*drinksv1.Drink{}
	for i := range drinks.Items {
		byUID[string(drinks.Items[i].UID)] = &drinks.Items[i]
	}
	cms := &corev1.ConfigMapList{}
	if err := kc.List(ctx, cms, client.InNamespace(loadNS)); err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	n := 0
	for _, cm := range cms.Items {
		if cm.Name == "kube-root-ca.crt" {
			continue
		}
		n++
		ref := metav1.GetControllerOf(&cm)
		if ref == nil || byUID[string(ref.UID)] == nil {
			t.Errorf("ConfigMap %s is orphaned (controller %v)", cm.Name, ref)
			continue
		}
		d := byUID[string(ref.UID)]
		per[d.Name]++
		if cm.Name != d.Name || cm.Data["displayName"] != d.Spec.DisplayName || cm.Data["sugarCubes"] != strconv.Itoa(int(d.Spec.SugarCubes)) {
			t.Errorf("ConfigMap %s does not render Drink %s: %v", cm.Name, d.Name, cm.Data)
		}
	}
	missing, dup := 0, 0
	for _, d := range drinks.Items {
		switch per[d.Name] {
		case 0:
			missing++
		case 1:
		default:
			dup++
		}
	}
	if missing > 0 || dup > 0 {
		t.Errorf("%d Drinks without a ConfigMap, %d with more than one", missing, dup)
	}
	fmt.Printf("e2e: %d Drinks, %d ConfigMaps, %d missing, %d duplicated\n", len(drinks.Items), n, missing, dup)
}

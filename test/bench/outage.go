package bench

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/bootstrap"
	"github.com/example/myoperator/internal/opconfig"
)

// OutageResult is one outage of the OperatorConfig on N converged Drinks:
// OperatorConfig cluster deleted, then recreated by the bootstrap, and
// every write the API server received meanwhile.
type OutageResult struct {
	// DeleteSeconds: from the delete until the Drink controller finished
	// N more reconciles and its queue was empty, with no worker busy, on
	// two scrapes in a row; DeleteReconciles: the reconciles it finished
	// by then.
	DeleteSeconds, DeleteReconciles float64
	// DeleteQuietSeconds: from the delete until the read of the API
	// server's write counters that the next read, settle later, found
	// unchanged: writes had stopped by then (the manager sends its Events
	// asynchronously, after the reconciles that record them).
	DeleteQuietSeconds float64
	// RecreateSeconds: from bootstrap.CreateDefaultConfig until N more
	// reconciles, an empty queue twice and the new OperatorConfig's
	// status.observedGeneration at its generation; RecreateReconciles: the
	// reconciles finished by then; RecreateQuietSeconds: until the write
	// counters stood still, as DeleteQuietSeconds.
	RecreateSeconds, RecreateReconciles, RecreateQuietSeconds float64
	// Writes are all the writes from just before the delete until the
	// counters stood still after the recreate (Leases left out, as in
	// writesOf); DeleteWrites are those until just before the recreate,
	// RecreateWrites the rest.
	Writes, DeleteWrites, RecreateWrites Writes
	// RecordWrites are the changes of the record ConfigMap
	// (opconfig.RecordName in the operator's namespace) that a watch on
	// that one object saw over the whole measurement: ADDED, MODIFIED and
	// DELETED events. An update that changes nothing makes no event, and
	// the operator makes none (it compares before it writes).
	RecordWrites int
	// BeyondRecord is Writes' total minus RecordWrites: what the outage
	// cost besides keeping the record. It includes the outage itself: the
	// bench's DELETE of the OperatorConfig and the bootstrap's POST of the
	// new one.
	BeyondRecord float64
	// Events are the Events the API server created (POST events/ in
	// Writes; updates of an Event series are PATCH events/ there).
	Events float64
}

// outageEvents is the key of Event creates in Writes.
const outageEvents = "POST events/"

// ConfigOutage deletes OperatorConfig cluster on a control plane whose n
// Drinks in ns are converged, waits until the Drink controller has
// revisited them all (the delete enqueues every Drink), recreates it with
// bootstrap.CreateDefaultConfig as the initContainer does, waits for the
// revisit of all again and for the new OperatorConfig's status, and counts
// every write the API server received. timeout bounds each wait. m must
// be the manager that runs the controllers (leading, or without leader
// election).
func ConfigOutage(ctx context.Context, cp *ControlPlane, m *Manager, ns string, n int, timeout time.Duration) (OutageResult, error) {
	var res OutageResult
	recordWrites, stopWatch, err := watchRecord(ctx, cp)
	if err != nil {
		return res, err
	}
	defer stopWatch()
	before, err := cp.APIMetrics(ctx)
	if err != nil {
		return res, err
	}
	old := &operatorv1alpha1.OperatorConfig{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, old); err != nil {
		return res, fmt.Errorf("reading OperatorConfig %s: %w", operatorv1alpha1.SingletonName, err)
	}

	t0 := time.Now()
	d, err := drainAfter(ctx, m, n, timeout, func() error {
		if err := cp.Client.Delete(ctx, old); err != nil {
			return fmt.Errorf("deleting OperatorConfig %s: %w", old.Name, err)
		}
		return nil
	}, nil)
	if err != nil {
		return res, fmt.Errorf("after the delete: %w", err)
	}
	res.DeleteSeconds, res.DeleteReconciles = d.seconds, d.reconciles
	mid, quiet, err := quietWrites(ctx, cp, time.Now().Add(timeout))
	if err != nil {
		return res, fmt.Errorf("after the delete: %w", err)
	}
	res.DeleteQuietSeconds = quiet.Sub(t0).Seconds()
	gone := &operatorv1alpha1.OperatorConfig{}
	// CreateDefaultConfig leaves an existing one alone: the recreate would
	// measure nothing.
	switch err := cp.Client.Get(ctx, client.ObjectKeyFromObject(old), gone); {
	case err == nil:
		return res, fmt.Errorf("OperatorConfig %s still there after its delete", old.Name)
	case !apierrors.IsNotFound(err):
		return res, err
	}

	t1 := time.Now()
	var uid types.UID
	d, err = drainAfter(ctx, m, n, timeout, func() error {
		return bootstrap.CreateDefaultConfig(ctx, logr.Discard(), cp.Client)
	}, func() (bool, error) {
		c := &operatorv1alpha1.OperatorConfig{}
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(old), c); err != nil {
			return false, err
		}
		uid = c.UID
		return c.Status.ObservedGeneration == c.Generation, nil
	})
	if err != nil {
		return res, fmt.Errorf("after the recreate: %w", err)
	}
	if uid == old.UID {
		return res, fmt.Errorf("OperatorConfig %s has its old UID %s: not recreated", old.Name, uid)
	}
	res.RecreateSeconds, res.RecreateReconciles = d.seconds, d.reconciles
	after, quiet, err := quietWrites(ctx, cp, time.Now().Add(timeout))
	if err != nil {
		return res, fmt.Errorf("after the recreate: %w", err)
	}
	res.RecreateQuietSeconds = quiet.Sub(t1).Seconds()

	if res.RecordWrites, err = recordWrites(); err != nil {
		return res, err
	}
	res.Writes = after.Minus(writesOf(before))
	res.DeleteWrites = mid.Minus(writesOf(before))
	res.RecreateWrites = after.Minus(mid)
	res.BeyondRecord = res.Writes.Total() - float64(res.RecordWrites)
	res.Events = res.Writes[outageEvents]
	return res, nil
}

// drainAfter runs act, then waits until the Drink controller has finished
// at least want more reconciles, its queue is empty with no worker busy
// on two scrapes in a row, and done (when given) says so too. It counts no
// writes; its callers do (editAndDrain, and ConfigOutage over both halves
// of the outage).
func drainAfter(ctx context.Context, m *Manager, want int, timeout time.Duration, act func() error, done func() (bool, error)) (drain, error) {
	mm, err := m.Metrics(ctx)
	if err != nil {
		return drain{}, err
	}
	start := progressOf(mm)
	t0 := time.Now()
	if err := act(); err != nil {
		return drain{}, err
	}
	var d drain
	empty := 0
	err = poll(ctx, t0.Add(timeout), 100*time.Millisecond, func() (bool, error) {
		mm, err := m.Metrics(ctx)
		if err != nil {
			return false, err
		}
		p := progressOf(mm)
		if p.Reconciles-start.Reconciles < float64(want) || p.Depth > 0 || p.Active > 0 {
			empty = 0
			return false, nil
		}
		if done != nil {
			if ok, err := done(); err != nil || !ok {
				empty = 0
				return false, err
			}
		}
		if empty == 0 {
			d.seconds, d.reconciles = time.Since(t0).Seconds(), p.Reconciles-start.Reconciles
		}
		empty++
		return empty >= 2, nil
	})
	if err != nil {
		return drain{}, fmt.Errorf("waiting for %d reconciles and an empty queue: %w", want, err)
	}
	return d, nil
}

// quietWrites waits settle, then reads the API server's write counters
// every settle until two reads in a row agree, and returns the last and
// when the first of the two was read: the status patches of a drained
// queue are done, but the manager's Events trail its reconciles (its
// recorder sends them from a queue of its own).
func quietWrites(ctx context.Context, cp *ControlPlane, deadline time.Time) (Writes, time.Time, error) {
	var (
		last   Writes
		lastAt time.Time
	)
	for {
		select {
		case <-ctx.Done():
			return nil, time.Time{}, ctx.Err()
		case <-time.After(settle):
		}
		at := time.Now()
		m, err := cp.APIMetrics(ctx)
		if err != nil {
			return nil, time.Time{}, err
		}
		w := writesOf(m)
		if last != nil && maps.Equal(w, last) {
			return w, lastAt, nil
		}
		if at.After(deadline) {
			return nil, time.Time{}, fmt.Errorf("the API server still receives writes: %s in the last %s", w.Minus(last), settle)
		}
		last, lastAt = w, at
	}
}

// watchRecord counts the changes of the record ConfigMap from now on, by a
// watch on that one object (resumed where it stopped when the API server
// closes it). count waits until the watch has seen the ConfigMap's current
// version, stops the watch and returns how many changes it saw, or why the
// count is not exact; stop only stops the watch. Both may be called more
// than once.
func watchRecord(ctx context.Context, cp *ControlPlane) (count func() (int, error), stop func(), err error) {
	cms := cp.Clientset.CoreV1().ConfigMaps(OperatorNamespace)
	selector := fields.OneTermEqualSelector("metadata.name", opconfig.RecordName).String()
	current := func() (string, error) {
		list, err := cms.List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			return "", fmt.Errorf("listing the record ConfigMap: %w", err)
		}
		if len(list.Items) == 0 {
			return "", nil
		}
		return list.Items[0].ResourceVersion, nil
	}
	list, err := cms.List(ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		return nil, nil, fmt.Errorf("listing the record ConfigMap: %w", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	rw, err := watchtools.NewRetryWatcherWithContext(wctx, list.ResourceVersion, &toolscache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return cms.Watch(ctx, o)
		},
	})
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("watching the record ConfigMap: %w", err)
	}
	var (
		mu      sync.Mutex
		n       int
		seen    string // the resourceVersion of the last change seen
		failure error
	)
	if len(list.Items) > 0 {
		seen = list.Items[0].ResourceVersion
	}
	go func() {
		for ev := range rw.ResultChan() {
			mu.Lock()
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				n++
				if o, ok := ev.Object.(metav1.Object); ok {
					seen = o.GetResourceVersion()
				}
			case watch.Error:
				if failure == nil {
					failure = fmt.Errorf("the watch on the record ConfigMap failed: %w", apierrors.FromObject(ev.Object))
				}
			case watch.Bookmark:
			}
			mu.Unlock()
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			rw.Stop()
			cancel()
			<-rw.Done()
		})
	}
	count = func() (int, error) {
		want, err := current()
		if err != nil {
			stop()
			return 0, err
		}
		// A ConfigMap that is there was seen in its current version
		// (a deleted one's DELETED event cannot be waited for this way).
		err = poll(ctx, time.Now().Add(30*time.Second), 50*time.Millisecond, func() (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			return want == "" || seen == want, nil
		})
		stop()
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			return n, fmt.Errorf("the watch on the record ConfigMap did not see its version %s: %w", want, err)
		}
		return n, failure
	}
	return count, stop, nil
}

// OutageRun is one standalone outage measurement: cfg.N Drinks converged
// on a fresh control plane by a manager with K reconciles at once,
// created by Workers clients, then ConfigOutage.
type OutageRun struct {
	K, Workers int
	// ConvergeSeconds: from the first create until every Drink was Ready
	// with its ConfigMap.
	ConvergeSeconds float64
	// MemoryLimit is the manager container's limit in config/manager,
	// which the manager ran with (bytes).
	MemoryLimit float64
	// Lists are one LIST of every converged Drink through v1 and v1alpha1,
	// paginated as kubectl does, and one unpaginated through v1alpha1 (one
	// ConversionReview of N objects), with the manager's peak memory:
	// measured before the outage, at the same N.
	Lists  Lists
	Outage OutageResult
}

// outageTimeout bounds each half of the outage (converge bounds the
// convergence the same).
const outageTimeout = 20 * time.Minute

// Outage measures ConfigOutage at cfg.N on a control plane of its own.
func Outage(ctx context.Context, cfg Config, k, w int) (OutageRun, error) {
	run := OutageRun{K: k, Workers: w}
	limit, err := ManifestMemoryLimit()
	if err != nil {
		return run, err
	}
	run.MemoryLimit, cfg.memoryLimit = limit, limit
	err = withPlane(ctx, cfg, "outage", func(cp *ControlPlane, dir string) error {
		m, err := startReady(ctx, cfg, cp, dir, k, false)
		if err != nil {
			return err
		}
		defer m.Stop()
		p, err := converge(ctx, cfg, cp, m, w)
		if err != nil {
			return fmt.Errorf("converging: %w", err)
		}
		run.ConvergeSeconds = p.Seconds
		cfg.Logf("N=%d K=%d: converged in %.1fs; listing every Drink", cfg.N, k, p.Seconds)
		if run.Lists, err = ListDrinks(ctx, cp, drinkNS, cfg.N, 1, m.Pid()); err != nil {
			return fmt.Errorf("listing: %w", err)
		}
		l := run.Lists
		cfg.Logf("N=%d: LIST v1 %.1fs, v1alpha1 %.1fs (%d pages, peak RSS %.1f MiB), unpaginated v1alpha1 %.1fs (peak RSS %.1f MiB, RSS before %.1f MiB); deleting OperatorConfig %s",
			cfg.N, l.V1, l.V1alpha1, l.Pages, l.PeakRSSV1alpha1/(1<<20), l.Unpaginated, l.PeakRSSUnpaginated/(1<<20), l.RSSBefore/(1<<20), operatorv1alpha1.SingletonName)
		run.Outage, err = ConfigOutage(ctx, cp, m, drinkNS, cfg.N, outageTimeout)
		if err != nil {
			return fmt.Errorf("OperatorConfig outage: %w", err)
		}
		o := run.Outage
		cfg.Logf("N=%d outage: delete drained in %.1fs (writes quiet at %.1fs), recreate drained in %.1fs (quiet at %.1fs); writes %s",
			cfg.N, o.DeleteSeconds, o.DeleteQuietSeconds, o.RecreateSeconds, o.RecreateQuietSeconds, o.Writes)
		return nil
	})
	return run, err
}

package bench

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
)

// The manager's own metrics that say how far the Drink controller got
// without a write: controller-runtime counts every finished reconcile and
// exposes its work queue.
const (
	reconcileTotal = "controller_runtime_reconcile_total"
	activeWorkers  = "controller_runtime_active_workers"
	queueDepth     = "workqueue_depth"
	drinkCtrl      = "drink"
)

// progress is the Drink controller's state in one scrape of the manager.
type progress struct {
	Reconciles, Depth, Active float64
}

// progressOf reads the Drink controller's finished reconciles (every
// result), queue depth (every priority) and busy workers.
func progressOf(m Metrics) progress {
	isDrink := func(l map[string]string) bool { return l["controller"] == drinkCtrl || l["name"] == drinkCtrl }
	return progress{
		Reconciles: m.Sum(reconcileTotal, isDrink),
		Depth:      m.Sum(queueDepth, isDrink),
		Active:     m.Sum(activeWorkers, isDrink),
	}
}

// operandWrites are the writes to Drinks and ConfigMaps (any verb,
// subresource included): what a restart or a no-op revisit must not make.
// Other writes (the manager's Events, webhook certificates injected into
// the CRDs and webhook configurations) are listed next to them.
func operandWrites(w Writes) float64 {
	var t float64
	for k, v := range w {
		_, rest, _ := strings.Cut(k, " ")
		if res, _, _ := strings.Cut(rest, "/"); res == "drinks" || res == "configmaps" {
			t += v
		}
	}
	return t
}

// RestartResult is a manager started with leader election on N converged
// Drinks, timed from its start.
type RestartResult struct {
	// ReadySeconds: /readyz answers (caches synced, webhooks served);
	// LeaderSeconds: it holds the Lease; ReconciledSeconds: the Drink
	// controller finished N reconciles; DrainedSeconds: and its queue is
	// empty with no worker busy.
	ReadySeconds, LeaderSeconds, ReconciledSeconds, DrainedSeconds float64
	// Writes from the start until drained plus settle (Leases left out).
	Writes Writes
	// Reconciles the Drink controller finished until drained.
	Reconciles float64
}

// settle is how long writes are still counted after a queue drained, for
// status patches in flight.
const settle = 2 * time.Second

// Restart starts a manager (opts, with leader election) on a control plane
// whose N Drinks are converged and whose previous manager has stopped, and
// measures how soon it is ready, leads and has revisited every Drink, and
// what it wrote meanwhile. The manager is left running for the caller.
func Restart(ctx context.Context, cp *ControlPlane, opts ManagerOptions, n int, timeout time.Duration) (*Manager, RestartResult, error) {
	before, err := cp.APIMetrics(ctx)
	if err != nil {
		return nil, RestartResult{}, err
	}
	opts.LeaderElect = true
	m, err := StartManager(opts)
	if err != nil {
		return nil, RestartResult{}, err
	}
	started := time.Now()
	var res RestartResult
	since := func() float64 { return time.Since(started).Seconds() }
	err = poll(ctx, started.Add(timeout), 100*time.Millisecond, func() (bool, error) {
		if res.ReadySeconds == 0 {
			if code, _, err := m.get(ctx, "http://"+loopback(m.opts.ProbePort)+"/readyz"); err == nil && code == http.StatusOK {
				res.ReadySeconds = since()
			}
		}
		if res.LeaderSeconds == 0 {
			if h, err := leaseHolder(ctx, cp.Client); err == nil && h != "" {
				res.LeaderSeconds = since()
			}
		}
		mm, err := m.Metrics(ctx)
		if err != nil {
			return false, nil // not serving metrics yet
		}
		p := progressOf(mm)
		if res.ReconciledSeconds == 0 && p.Reconciles >= float64(n) {
			res.ReconciledSeconds = since()
		}
		if res.ReconciledSeconds > 0 && res.LeaderSeconds > 0 && res.ReadySeconds > 0 && p.Depth == 0 && p.Active == 0 {
			res.DrainedSeconds, res.Reconciles = since(), p.Reconciles
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		m.Stop()
		return nil, res, fmt.Errorf("restart after %.1fs (ready %.1fs, leader %.1fs, reconciled %.1fs): %w", since(), res.ReadySeconds, res.LeaderSeconds, res.ReconciledSeconds, err)
	}
	time.Sleep(settle)
	after, err := cp.APIMetrics(ctx)
	if err != nil {
		m.Stop()
		return nil, res, err
	}
	res.Writes = writesOf(after).Minus(writesOf(before))
	return m, res, nil
}

// poll calls f every interval until it says done, fails, or deadline.
func poll(ctx context.Context, deadline time.Time, interval time.Duration, f func() (bool, error)) error {
	for {
		done, err := f()
		if err != nil || done {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not done by the deadline")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// EditResult is one OperatorConfig edit that makes the Drink controller
// revisit every Drink.
type EditResult struct {
	// Unmanaged: from the patch to Unmanaged until N reconciles and an
	// empty queue; every Drink's status then says Unmanaged (N writes by
	// design: an Unmanaged Drink says so in status, docs/DESIGN.md).
	UnmanagedSeconds    float64
	UnmanagedWrites     Writes
	UnmanagedReconciles float64
	// Managed: from the patch back to Managed until N+1 reconciles (the
	// probe's too) and an empty queue; writes until then plus settle,
	// including the bench's own (the patch, the probe's create).
	DrainSeconds      float64
	ManagedWrites     Writes
	ManagedReconciles float64
	// ProbeReadySeconds: a Drink created right after the patch to Managed,
	// from its create until Ready at its generation.
	ProbeReadySeconds float64
}

// Edit flips the OperatorConfig to Unmanaged, waits until every Drink says
// so, flips it back to Managed and creates a probe Drink at once: the
// probe is queued with N revisits. m must lead (Restart's manager).
func Edit(ctx context.Context, cp *ControlPlane, m *Manager, ns string, n int, timeout time.Duration) (EditResult, error) {
	var res EditResult
	d, err := editAndDrain(ctx, cp, m, operatorv1alpha1.Unmanaged, n, timeout, nil)
	if err != nil {
		return res, fmt.Errorf("to Unmanaged: %w", err)
	}
	res.UnmanagedSeconds, res.UnmanagedWrites, res.UnmanagedReconciles = d.seconds, d.writes, d.reconciles
	probe := newDrink(ns, 0)
	probe.Name = "edit-probe"
	var created time.Time
	afterPatch := func() error {
		created = time.Now()
		return cp.Client.Create(ctx, probe)
	}
	watchProbe := func(pctx context.Context) {
		for pctx.Err() == nil {
			d := &drinksv1.Drink{}
			if err := cp.Client.Get(pctx, client.ObjectKeyFromObject(probe), d); err == nil && drinkDone(d) {
				res.ProbeReadySeconds = time.Since(created).Seconds()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	d, err = editAndDrain(ctx, cp, m, operatorv1alpha1.Managed, n+1, timeout, func() error {
		if err := afterPatch(); err != nil {
			return err
		}
		go func() { defer close(done); watchProbe(pctx) }()
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("back to Managed: %w", err)
	}
	res.DrainSeconds, res.ManagedWrites, res.ManagedReconciles = d.seconds, d.writes, d.reconciles
	select {
	case <-done:
	case <-time.After(timeout):
	}
	cancel()
	if res.ProbeReadySeconds == 0 {
		return res, fmt.Errorf("the probe Drink created after the edit was not Ready within %s", timeout)
	}
	return res, nil
}

// editAndDrain patches the OperatorConfig's managementState, runs then
// (if any) right after, and waits until the Drink controller has finished
// at least want more reconciles and its queue is empty on two scrapes in a
// row (a status patch requeues its Drink once more).
func editAndDrain(ctx context.Context, cp *ControlPlane, m *Manager, state operatorv1alpha1.ManagementState, want int, timeout time.Duration, then func() error) (drain, error) {
	before, err := cp.APIMetrics(ctx)
	if err != nil {
		return drain{}, err
	}
	patch := fmt.Sprintf(`{"spec":{"managementState":%q}}`, state)
	cfg := &operatorv1alpha1.OperatorConfig{}
	cfg.Name = operatorv1alpha1.SingletonName
	d, err := drainAfter(ctx, m, want, timeout, func() error {
		if err := cp.Client.Patch(ctx, cfg, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
			return fmt.Errorf("patching the OperatorConfig: %w", err)
		}
		if then != nil {
			return then()
		}
		return nil
	}, nil)
	if err != nil {
		return drain{}, err
	}
	time.Sleep(settle)
	after, err := cp.APIMetrics(ctx)
	if err != nil {
		return drain{}, err
	}
	d.writes = writesOf(after).Minus(writesOf(before))
	return d, nil
}

// drain is how long the Drink controller took to empty its queue after an
// edit, with what it reconciled and what was written meanwhile.
type drain struct {
	seconds, reconciles float64
	writes              Writes
}

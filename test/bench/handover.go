package bench

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
)

// HandoverResult is the time from the signal to the leader until another
// replica holds the Lease, and until it has reconciled a Drink created
// right after the signal.
type HandoverResult struct {
	LeaseSeconds, ReconcileSeconds float64
	// ReleasedSeconds is when the old leader had released the Lease (0
	// when it never did: SIGKILL); the rest of LeaseSeconds is the new
	// leader's wait for its next try.
	ReleasedSeconds float64
	// ExitCode of the old leader (-1 when killed).
	ExitCode int
	// AllReconciledSeconds: the new leader has finished a reconcile per
	// Drink (the N and the probe) and its queue is empty. Writes are the
	// API server's from the signal until then plus settle (Leases left
	// out), the bench's probe create and the probe's own ConfigMap and
	// status included.
	AllReconciledSeconds float64 `json:",omitempty"`
	Writes               Writes  `json:",omitempty"`
}

// Handover runs two replicas with leader election and signals the leader.
// The leader is started first, on a webhook port the API server does not
// call, so that the follower (on config/local's port) keeps serving the
// webhooks that the probe Drink's create needs; the measured time is then
// the operator's, not a missing webhook's.
func Handover(ctx context.Context, cp *ControlPlane, opts ManagerOptions, ns string, n int, sig syscall.Signal) (HandoverResult, error) {
	leaderOpts := opts
	leaderOpts.WebhookPort, leaderOpts.MetricsPort, leaderOpts.ProbePort, leaderOpts.PprofPort = WebhookPort+1, opts.MetricsPort+10, opts.ProbePort+10, 0
	leader, err := startReplica(ctx, leaderOpts, sig, "leader")
	if err != nil {
		return HandoverResult{}, err
	}
	defer leader.Stop()
	holder, err := waitHolder(ctx, cp.Client, 30*time.Second)
	if err != nil {
		return HandoverResult{}, fmt.Errorf("first replica: %w", err)
	}
	follower, err := startReplica(ctx, opts, sig, "follower")
	if err != nil {
		return HandoverResult{}, err
	}
	defer follower.Stop()

	before, err := cp.APIMetrics(ctx)
	if err != nil {
		return HandoverResult{}, err
	}
	signalled := time.Now()
	if err := leader.Signal(sig); err != nil {
		return HandoverResult{}, err
	}
	probe := newDrink(ns, 0)
	probe.Name = "handover-" + sigName(sig)
	if err := cp.Client.Create(ctx, probe); err != nil {
		return HandoverResult{}, fmt.Errorf("creating the probe Drink: %w", err)
	}
	res := HandoverResult{ExitCode: -1}
	deadline := signalled.Add(90 * time.Second)
	for res.ReconcileSeconds == 0 || res.LeaseSeconds == 0 {
		if time.Now().After(deadline) {
			return res, fmt.Errorf("after %s: new lease %.1fs, probe reconciled %.1fs", time.Since(signalled), res.LeaseSeconds, res.ReconcileSeconds)
		}
		if res.LeaseSeconds == 0 {
			h, err := leaseHolder(ctx, cp.Client)
			switch {
			case err != nil:
			case h == "" && res.ReleasedSeconds == 0:
				res.ReleasedSeconds = time.Since(signalled).Seconds()
			case h != "" && h != holder:
				res.LeaseSeconds = time.Since(signalled).Seconds()
			}
		}
		if res.ReconcileSeconds == 0 {
			d := &drinksv1.Drink{}
			if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(probe), d); err == nil && drinkDone(d) {
				res.ReconcileSeconds = time.Since(signalled).Seconds()
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The follower's own counters start at its start: every reconcile it
	// counts was made as the leader.
	err = poll(ctx, deadline, 100*time.Millisecond, func() (bool, error) {
		mm, err := follower.Metrics(ctx)
		if err != nil {
			return false, nil
		}
		p := progressOf(mm)
		return p.Reconciles >= float64(n+1) && p.Depth == 0 && p.Active == 0, nil
	})
	if err != nil {
		return res, fmt.Errorf("the new leader reconciling all %d Drinks: %w", n+1, err)
	}
	res.AllReconciledSeconds = time.Since(signalled).Seconds()
	time.Sleep(settle)
	after, err := cp.APIMetrics(ctx)
	if err != nil {
		return res, err
	}
	res.Writes = writesOf(after).Minus(writesOf(before))
	var exit *exec.ExitError
	switch err := leader.Wait(45 * time.Second); {
	case err == nil:
		res.ExitCode = 0
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitCode() // -1 when a signal ended it
	default:
		return res, fmt.Errorf("the old leader after %s: %w", sigName(sig), err)
	}
	return res, nil
}

// startReplica starts a manager with leader election and waits until it is
// ready; its log names the signal and its role.
func startReplica(ctx context.Context, opts ManagerOptions, sig syscall.Signal, role string) (*Manager, error) {
	opts.LeaderElect = true
	opts.LogFile = filepath.Join(filepath.Dir(opts.LogFile), fmt.Sprintf("handover-%s-%s.log", sigName(sig), role))
	return StartReady(ctx, opts)
}

func sigName(sig syscall.Signal) string {
	if sig == syscall.SIGKILL {
		return "sigkill"
	}
	return "sigterm"
}

func leaseHolder(ctx context.Context, c client.Client) (string, error) {
	l := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: OperatorNamespace, Name: LeaseName}, l); err != nil {
		return "", err
	}
	if l.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *l.Spec.HolderIdentity, nil
}

// waitHolder waits until someone holds the Lease and returns who.
func waitHolder(ctx context.Context, c client.Client, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		if h, _ := leaseHolder(ctx, c); h != "" {
			return h, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("nobody took the Lease within %s", timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

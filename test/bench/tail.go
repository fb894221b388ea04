package bench

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// conversionCalls is the API server's histogram of calls to CRD
// conversion webhooks: its _count is the number of calls.
const conversionCalls = "apiserver_crd_conversion_webhook_duration_seconds_count"

// TailRun is n Drink creates one at a time, timed by the client (exact).
type TailRun struct {
	Creates  int
	P50, P99 float64 // seconds
	// AdmissionCalls and ConversionCalls per create, from the API server's
	// counters: the Drink admission webhooks it called, and its calls to
	// the conversion webhook (any CRD, any caller: with creates through
	// the storage version v1, these are the watch caches of v1alpha1 and
	// v1beta1 converting each new Drink).
	AdmissionCalls, ConversionCalls float64
}

// Tail is the admission tail at the client: the same creates on the same
// API server with the operator's admission webhooks and without them.
type Tail struct {
	Hooks, NoHooks TailRun
}

// AdmissionTail creates warm + n Drinks one at a time in nsHooks through
// the webhooks, then deletes the operator's mutating and validating webhook
// configurations (conversion stays, as the CRD says) and does the same in
// nsNone. It leaves the control plane without admission webhooks, so it
// must be the last thing to write Drinks there. The second run has n more
// Drinks in etcd than the first, which favours the webhooks slightly.
//
// profile, when set, is called as each run's timed creates start and
// returns what waits for the profiles it started (see profileCPU).
func AdmissionTail(ctx context.Context, cp *ControlPlane, nsHooks, nsNone string, warm, n int, profile func(run string) func() error) (Tail, error) {
	var t Tail
	var err error
	if t.Hooks, err = tailRun(ctx, cp, nsHooks, warm, n, profile); err != nil {
		return t, fmt.Errorf("with webhooks: %w", err)
	}
	if err := removeAdmissionWebhooks(ctx, cp); err != nil {
		return t, err
	}
	if t.NoHooks, err = tailRun(ctx, cp, nsNone, warm, n, profile); err != nil {
		return t, fmt.Errorf("without webhooks: %w", err)
	}
	if t.NoHooks.AdmissionCalls > 0 {
		return t, fmt.Errorf("the API server still called the Drink webhooks %.2f times per create after their configurations were deleted", t.NoHooks.AdmissionCalls)
	}
	return t, nil
}

func tailRun(ctx context.Context, cp *ControlPlane, ns string, warm, n int, profile func(run string) func() error) (TailRun, error) {
	if err := cp.CreateNamespace(ctx, ns); err != nil {
		return TailRun{}, err
	}
	if err := settleConversions(ctx, cp, 2*time.Second, 10*time.Minute); err != nil {
		return TailRun{}, err
	}
	var before Metrics
	profiled := func() error { return nil }
	load, err := warmThenTime(ctx, cp, ns, warm, n, func() (err error) {
		before, err = cp.APIMetrics(ctx)
		if profile != nil {
			profiled = profile(ns)
		}
		return err
	})
	if err != nil {
		return TailRun{}, err
	}
	if err := profiled(); err != nil {
		return TailRun{}, fmt.Errorf("profiling the creates: %w", err)
	}
	after, err := cp.APIMetrics(ctx)
	if err != nil {
		return TailRun{}, err
	}
	lat := seconds(load.Latencies)
	per := func(f func(Metrics) float64) float64 { return (f(after) - f(before)) / float64(n) }
	return TailRun{
		Creates: n, P50: Percentile(lat, 50), P99: Percentile(lat, 99),
		AdmissionCalls:  per(func(m Metrics) float64 { return admissionOf(m).Total }),
		ConversionCalls: per(func(m Metrics) float64 { return m.Sum(conversionCalls, nil) }),
	}, nil
}

// removeAdmissionWebhooks deletes the operator's mutating and validating
// webhook configurations, then waits until a Drink create no longer calls
// them (the API server applies the deletion through its informers).
func removeAdmissionWebhooks(ctx context.Context, cp *ControlPlane) error {
	// config/local's names (config/loopback-webhooks).
	adm := cp.Clientset.AdmissionregistrationV1()
	if err := adm.MutatingWebhookConfigurations().Delete(ctx, "myoperator-mutating-webhook-configuration", metav1.DeleteOptions{}); err != nil {
		return err
	}
	if err := adm.ValidatingWebhookConfigurations().Delete(ctx, "myoperator-validating-webhook-configuration", metav1.DeleteOptions{}); err != nil {
		return err
	}
	if err := cp.CreateNamespace(ctx, "tail-check"); err != nil {
		return err
	}
	for i := 0; ; i++ {
		before, err := cp.APIMetrics(ctx)
		if err != nil {
			return err
		}
		if err := cp.Client.Create(ctx, newDrink("tail-check", i)); err != nil {
			return err
		}
		after, err := cp.APIMetrics(ctx)
		if err != nil {
			return err
		}
		if admissionOf(after).Total == admissionOf(before).Total {
			return nil
		}
		if i >= 100 {
			return fmt.Errorf("the Drink webhooks were still called 10 s after their configurations were deleted")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// settleConversions waits until the API server has made no conversion
// webhook call for quiet. Without it, the tail at N = 50,000 counted 4.31
// conversion calls per create (2.00 at 10,000) and a p99 of 40.5 ms
// (17.7 ms without webhooks): the creates were timed right after 50,000
// bulk creates, whose conversion by the v1alpha1 and v1beta1 watch caches
// may still run; timed creates must not measure, nor be charged with,
// what came before them.
func settleConversions(ctx context.Context, cp *ControlPlane, quiet, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	last, err := cp.APIMetrics(ctx)
	if err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(quiet):
		}
		now, err := cp.APIMetrics(ctx)
		if err != nil {
			return err
		}
		if now.Sum(conversionCalls, nil) == last.Sum(conversionCalls, nil) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the API server still called the conversion webhook after %s (%.0f calls in the last %s)",
				limit, now.Sum(conversionCalls, nil)-last.Sum(conversionCalls, nil), quiet)
		}
		last = now
	}
}

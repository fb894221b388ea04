package migrate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestRetryUntilDone: a failing migration is retried with a delay that
// doubles up to its cap and then stays there, however many attempts fail
// (the release before gave up after 8), until one succeeds.
func TestRetryUntilDone(t *testing.T) {
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Steps: 10, Cap: 8 * time.Second}
	for _, tc := range []struct {
		name     string
		failures int
		wantGaps []time.Duration // between consecutive attempts
	}{
		{name: "first attempt succeeds", failures: 0, wantGaps: nil},
		{name: "a few failures", failures: 3, wantGaps: seconds(1, 2, 4)},
		{name: "many more failures than steps", failures: 40, wantGaps: append(seconds(1, 2, 4), repeat(8*time.Second, 37)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := runRetry(t, backoff, tc.failures)
			if len(at) != tc.failures+1 {
				t.Fatalf("%d attempts, want %d (every failure retried, then one success)", len(at), tc.failures+1)
			}
			var gaps []time.Duration
			for i := 1; i < len(at); i++ {
				gaps = append(gaps, at[i].Sub(at[i-1]))
			}
			if diff := cmp.Diff(tc.wantGaps, gaps); diff != "" {
				t.Errorf("delays between attempts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRetryUntilDoneStopsWithContext: the retries end with the leader.
func TestRetryUntilDoneStopsWithContext(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		retryUntilDone(ctx, clk, wait.Backoff{Duration: time.Hour}.DelayFunc(), func(context.Context) error { return errors.New("refused") })
	}()
	waitFor(t, clk.HasWaiters)
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("retries went on after the context ended")
	}
}

// runRetry runs retryUntilDone on a fake clock with an attempt that fails
// the first failures times, advancing the clock a second at a time while
// the loop waits, and returns the clock's time at each attempt.
func runRetry(t *testing.T, backoff wait.Backoff, failures int) []time.Time {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	attempts := make(chan time.Time, failures+10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		n := 0
		retryUntilDone(context.Background(), clk, backoff.DelayFunc(), func(context.Context) error {
			attempts <- clk.Now()
			if n++; n <= failures {
				return errors.New("refused")
			}
			return nil
		})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-done:
			close(attempts)
			var at []time.Time
			for a := range attempts {
				at = append(at, a)
			}
			return at
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("retryUntilDone did not return")
		}
		if clk.HasWaiters() {
			clk.Step(time.Second)
		} else {
			time.Sleep(time.Millisecond)
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

func seconds(s ...int) []time.Duration {
	var d []time.Duration
	for _, n := range s {
		d = append(d, time.Duration(n)*time.Second)
	}
	return d
}

func repeat(d time.Duration, n int) []time.Duration {
	r := make([]time.Duration, n)
	for i := range r {
		r[i] = d
	}
	return r
}

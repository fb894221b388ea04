package migrate

import (
	"context"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
)

// retryUntilDone calls attempt until it succeeds or ctx ends, waiting
// delay() on clk after each failure. It never gives up by itself: the
// migration must finish for as long as the leader runs, and delay caps how
// long a cluster that recovers waits for the next attempt.
func retryUntilDone(ctx context.Context, clk clock.Clock, delay wait.DelayFunc, attempt func(context.Context) error) {
	for ctx.Err() == nil {
		if attempt(ctx) == nil {
			return
		}
		t := clk.NewTimer(delay())
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C():
		}
	}
}

package bench

import (
	"context"
	"fmt"
	"time"
)

// Phase is one timed phase and what the API server counted during it.
type Phase struct {
	Seconds float64
	Metrics PhaseMetrics
	// CreateSeconds is how long the bench took to create the Drinks (the
	// operator phase only); the rest of Seconds is the operator catching up.
	CreateSeconds float64 `json:",omitempty"`
}

// Converge creates n Drinks with w workers while the manager runs and
// returns the time from the first create until every Drink has
// observedGeneration == generation, Ready=True and a correct ConfigMap.
// The bench writes only the n creates in this phase; every other write the
// API server counts is the manager's.
func Converge(ctx context.Context, cp *ControlPlane, m *Manager, ns string, n, w int, timeout time.Duration) (Phase, error) {
	before, err := takeSnapshot(ctx, cp, m)
	if err != nil {
		return Phase{}, err
	}
	wait, err := watchConvergence(ctx, cp.Config, ns, n, timeout)
	if err != nil {
		return Phase{}, err
	}
	start := time.Now()
	load := runWorkers(ctx, w, upTo(n), func(ctx context.Context, i int) error {
		return cp.Client.Create(ctx, newDrink(ns, i))
	})
	if load.FirstErr != nil {
		return Phase{}, fmt.Errorf("creating Drinks: %d of %d failed, first: %w", load.Errors, n, load.FirstErr)
	}
	converged, err := wait()
	if err != nil {
		return Phase{}, err
	}
	after, err := takeSnapshot(ctx, cp, m)
	if err != nil {
		return Phase{}, err
	}
	return Phase{Seconds: converged.Sub(start).Seconds(), CreateSeconds: load.Elapsed.Seconds(), Metrics: before.until(after)}, nil
}

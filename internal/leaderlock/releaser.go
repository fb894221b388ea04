package leaderlock

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Releaser releases the Lease once the reconcilers have stopped. It is a
// runnable of the manager's cache group (it has a cache): on shutdown,
// controller-runtime stops the leader-election runnables, which include
// every controller, and waits for them before it stops the caches, and the
// webhook server (with its drain) only after that. So when Releaser's
// context ends, nothing that needs the Lease is running.
type Releaser struct {
	Lock *Lock
	// Cache is the manager's: the cache group waits for it to sync, which
	// the manager does anyway.
	Cache cache.Cache
	// Elected is the manager's: a replica that never led has nothing to
	// release.
	Elected <-chan struct{}
	// Timeout bounds the release (the renew deadline, as client-go's).
	Timeout time.Duration
}

var _ manager.Runnable = &Releaser{}

// GetCache puts Releaser in the manager's cache group.
func (r *Releaser) GetCache() cache.Cache { return r.Cache }

// Start waits for the shutdown and then releases the Lease if this replica
// leads.
func (r *Releaser) Start(ctx context.Context) error {
	<-ctx.Done()
	select {
	case <-r.Elected:
	default:
		return nil
	}
	log := logf.FromContext(ctx).WithName("leader-election")
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.Timeout)
	defer cancel()
	start := time.Now()
	released, err := r.Lock.Release(rctx)
	switch {
	case err != nil:
		// The Lease then expires after its duration, as after a crash.
		log.Error(err, "releasing the Lease once the reconcilers stopped")
	case released:
		log.Info("released the Lease: the reconcilers have stopped; the webhooks drain on", "took", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

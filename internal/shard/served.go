package shard

import (
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
)

// Served is the buckets one controller of a replica serves, which may
// shrink while it runs: the buckets a replica takes in one handover share
// one cache and one controller (a list and a watch of all of them, so the
// API server goes through its cache once for them, not once per bucket),
// and a bucket that later moves alone is dropped from the set rather than
// making the replica list the ones it keeps again (Coordinator).
//
// The reconciler checks Matches before it writes, and runs each reconcile
// inside Hold: Drop returns only once no reconcile that could still write
// for a dropped bucket runs.
type Served struct {
	// started are the buckets the cache selects, fixed for its life.
	started []int
	// now is the buckets served now and their matcher, replaced whole by
	// Drop; read without a lock, because Matches runs inside Hold.
	now atomic.Pointer[servedNow]
	// reconciles holds a read lock for each running reconcile; Drop takes
	// the write lock once to wait for them.
	reconciles sync.RWMutex
}

type servedNow struct {
	buckets []int
	matcher Matcher
}

// NewServed serves buckets.
func NewServed(buckets []int) *Served {
	s := &Served{started: slices.Clone(buckets)}
	s.now.Store(&servedNow{buckets: slices.Clone(buckets), matcher: NewMatcher(buckets)})
	return s
}

// Started is the buckets s was made with: what its cache lists.
func (s *Served) Started() []int { return slices.Clone(s.started) }

// Buckets is the buckets served now.
func (s *Served) Buckets() []int { return slices.Clone(s.now.Load().buckets) }

// Matches says whether obj's UID hashes into a bucket served now.
func (s *Served) Matches(obj runtime.Object) (bool, error) {
	return s.now.Load().matcher.Matches(obj)
}

// Hold marks a reconcile as running until the returned func is called.
func (s *Served) Hold() (release func()) {
	s.reconciles.RLock()
	return s.reconciles.RUnlock
}

// Drop stops serving buckets at once and returns wait, which returns once
// every reconcile that began before the drop has returned: from then on
// nothing is written for them (a reconcile that begins later sees that
// they are not served). Dropping and waiting are apart so that a step
// that drops from several controllers waits for all of them together,
// not for each in turn (a fenced write may take the webhook's whole
// timeout). One goroutine drops (the Coordinator's).
func (s *Served) Drop(buckets []int) (wait func()) {
	keep := without(s.now.Load().buckets, buckets)
	s.now.Store(&servedNow{buckets: keep, matcher: NewMatcher(keep)})
	return func() {
		s.reconciles.Lock()
		//nolint:staticcheck // an empty critical section: taking the lock is the wait
		s.reconciles.Unlock()
	}
}

package shard

import (
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
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
	// mu guards holds: the running reconciles that began since the last
	// Drop. A Drop waits for those of the generation it ends, and a
	// reconcile that begins meanwhile joins the next and goes on at once.
	// A sync.RWMutex would do the wait, but a reader that comes while a
	// writer waits blocks too: every reconcile of the call, and the
	// replica's reconcile slots they hold, stood still until the slowest
	// reconcile from before the drop returned (a fenced write may take the
	// webhook's whole timeout), holding up the buckets the replica keeps.
	mu    sync.Mutex
	holds *holdGeneration
}

// holdGeneration counts the reconciles that began between two drops;
// done is closed once it has ended (a Drop) and none of them runs.
type holdGeneration struct {
	running int
	ended   bool
	done    chan struct{}
}

func newHoldGeneration() *holdGeneration { return &holdGeneration{done: make(chan struct{})} }

// release ends one of g's reconciles; s.mu is held.
func (g *holdGeneration) release() {
	if g.running--; g.running == 0 && g.ended {
		close(g.done)
	}
}

type servedNow struct {
	buckets []int
	matcher Matcher
}

// NewServed serves buckets.
func NewServed(buckets []int) *Served {
	s := &Served{started: slices.Clone(buckets), holds: newHoldGeneration()}
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
// It never waits, not even for a Drop under way.
func (s *Served) Hold() (release func()) {
	s.mu.Lock()
	g := s.holds
	g.running++
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			g.release()
			s.mu.Unlock()
		})
	}
}

// Drop stops serving buckets at once and returns wait, which returns once
// every reconcile that began before the drop has returned: from then on
// nothing is written for them (a reconcile that begins later sees that
// they are not served). Dropping and waiting are apart so that a step
// that drops from several controllers waits for all of them together,
// not for each in turn (a fenced write may take the webhook's whole
// timeout). One goroutine drops (the Coordinator's).
//
// The new set is stored before the generation of running reconciles
// ends, under s.mu: a reconcile that Holds after that sees the new set in
// Matches, so only those of the ended generation can still write for the
// dropped buckets.
func (s *Served) Drop(buckets []int) (wait func()) {
	keep := without(s.now.Load().buckets, buckets)
	s.now.Store(&servedNow{buckets: keep, matcher: NewMatcher(keep)})
	s.mu.Lock()
	g := s.holds
	s.holds = newHoldGeneration()
	if g.ended = true; g.running == 0 {
		close(g.done)
	}
	s.mu.Unlock()
	return func() { <-g.done }
}

// dropped reports whether s's cache selects bucket b but s no longer
// serves it.
func (s *Served) dropped(b int) bool {
	return slices.Contains(s.started, b) && !slices.Contains(s.now.Load().buckets, b)
}

// IdentityOfDropped wraps trim, the cache transform of Drinks or of their
// ConfigMaps, for the cache of s. The cache's selector is fixed for its
// life, so the Drinks and ConfigMaps of a bucket s dropped go on arriving
// in it, and the informer stores whatever the transform returns: of
// those, only what names the object is kept (name, namespace, UID,
// resourceVersion, and a ConfigMap's bucket label). Without it, every
// Drink created in a dropped bucket after the drop was held in full, with
// its ConfigMap, until the call ended, which it does only once a quarter
// of its buckets are dropped (Coordinator): a bucket is 1/64 of all
// Drinks, about 3,100 at 200,000. Nothing reads the kept part: the
// reconciler serves only the buckets s serves (Matches, by the UID), the
// inventory counts only those, and a ConfigMap without its owner
// reference maps to no Drink. An object cached before the drop is
// replaced so at its next event. A nil trim stands for the caches'
// default, which strips managed fields.
func (s *Served) IdentityOfDropped(trim toolscache.TransformFunc) toolscache.TransformFunc {
	if trim == nil {
		trim = cache.TransformStripManagedFields()
	}
	return func(obj any) (any, error) {
		switch o := obj.(type) {
		case *drinksv1.Drink:
			if s.dropped(BucketOf(o.UID)) {
				return &drinksv1.Drink{TypeMeta: o.TypeMeta, ObjectMeta: identity(o.ObjectMeta)}, nil
			}
		case *corev1.ConfigMap:
			if b, ok := ParseBucket(o.Labels[BucketLabel]); ok && s.dropped(b) {
				id := identity(o.ObjectMeta)
				id.Labels = map[string]string{BucketLabel: o.Labels[BucketLabel]}
				return &corev1.ConfigMap{TypeMeta: o.TypeMeta, ObjectMeta: id}, nil
			}
		}
		return trim(obj)
	}
}

// identity is what names an object in a cache.
func identity(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion}
}

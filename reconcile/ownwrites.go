package reconcile

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// ownWriteWindow bounds how long a recorded write keeps a reconcile from
// acting on an older copy. The cache delivers a write within seconds even
// when the API server is loaded; past this, the reconciler acts on what
// the cache has rather than wait on a record that may never be met (an
// object whose events stopped reaching this replica). Acting on an old
// copy costs at worst a status patch the API server refuses (409).
const ownWriteWindow = time.Minute

// ownWrites remembers the resourceVersion of each object's last status
// write by this reconciler until the cache shows that version or a later
// one. Without it, an event that arrives before the cache has the
// reconciler's own write (the Drink's ConfigMap is created, then the
// status is patched, and the ConfigMap's event comes first) starts a
// reconcile on the copy from before the write; that reconcile computes
// the same status again and sends a patch the API server refuses with
// 409, since the patch carries the old resourceVersion. With the Drinks
// shared, those refused patches were the only writes after convergence
// (docs/sharding.md).
//
// controller-runtime's client offers the same guarantee
// (client.CacheOptions.EnableReadYourWritesConsistency), but marked
// experimental, it waits for the cache inside Get rather than returning,
// and it does not work for a cache of several namespaces, which namespace
// scope uses. Here a reconcile that finds the cache behind returns at
// once: the event of the write it waits for brings the next reconcile.
//
// Keys are namespace/name, not UIDs: a Drink deleted and created again
// under its name has a later resourceVersion than any write to the old
// one, so its copy is never taken for a stale one, and a read that finds
// the name gone can drop the record.
type ownWrites struct {
	mu sync.Mutex
	m  map[types.NamespacedName]ownWrite
	// swept is the size of m after the last sweep of expired records.
	swept int
}

type ownWrite struct {
	rv string
	at time.Time
}

// record notes that this reconciler wrote key at resourceVersion rv.
func (w *ownWrites) record(key types.NamespacedName, rv string, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[types.NamespacedName]ownWrite{}
	}
	w.m[key] = ownWrite{rv: rv, at: now}
	// Records normally go when the write's event brings the next
	// reconcile, or when a reconcile finds the object gone; any other
	// (a namespace no longer served) goes in a sweep each time the map
	// has doubled, so that the sweeps cost O(1) per record. A replica
	// sharing the Drinks keeps the records of each bucket with that
	// bucket's reconciler (DrinkReconciler.forShare), freed with it.
	if len(w.m) > 2*w.swept+1024 {
		for k, o := range w.m {
			if now.Sub(o.at) > ownWriteWindow {
				delete(w.m, k)
			}
		}
		w.swept = len(w.m)
	}
}

// behind reports whether a copy of key at resourceVersion rv predates
// this reconciler's last write to it, within ownWriteWindow. A copy that
// has caught up, an expired record and a resourceVersion that does not
// compare (never from a real API server) drop the record.
func (w *ownWrites) behind(key types.NamespacedName, rv string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	o, ok := w.m[key]
	if !ok {
		return false
	}
	if cmp, err := resourceversion.CompareResourceVersion(rv, o.rv); err == nil && cmp < 0 && now.Sub(o.at) <= ownWriteWindow {
		return true
	}
	delete(w.m, key)
	return false
}

// forget drops key's record: the object is gone.
func (w *ownWrites) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, key)
}

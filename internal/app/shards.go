package app

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/shard"
	"github.com/example/myoperator/reconcile"
)

// ShardingOptions turn on sharing the Drinks among the replicas
// (--shard-drinks): each replica reconciles the Drinks of the buckets it
// holds (internal/shard), watching only those through the API server's
// sharded list and watch. Guestbooks, the OperatorConfig and the storage
// migration stay with the leader; every replica serves the webhooks.
type ShardingOptions struct {
	// Duration is how long a replica that stopped renewing its member
	// Lease still counts as a member; Renew how often each replica renews
	// it and looks at the buckets. Zero uses 15 s and 5 s.
	Duration, Renew time.Duration
}

var (
	shardBuckets = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "myoperator_shard_buckets",
		Help: "Buckets of the Drinks (of 64) this replica serves, with --shard-drinks; 0 without.",
	})
	shardUnselected = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "myoperator_shard_unselected_drinks_total",
		Help: "Drinks the API server sent to one of this replica's bucket caches outside that bucket, each counted once per cache that dropped it: the server ignored the shard selector (its ShardedListAndWatch feature gate is off), and the replica filters on the client.",
	})
	shardHandovers = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "myoperator_shard_handovers_total",
		Help: "Changes of the buckets this replica serves.",
	})
)

func init() {
	metrics.Registry.MustRegister(shardBuckets, shardUnselected, shardHandovers)
}

// identity is the replica's name among the shard members: its pod's, or
// the host's outside a pod.
func (o Options) identity() (string, error) {
	if o.PodName != "" {
		return o.PodName, nil
	}
	return os.Hostname()
}

// addSharedDrinks adds the coordinator that serves this replica's share of
// the Drinks, in place of the leader's Drink controller.
func addSharedDrinks(cfg *rest.Config, mgr ctrl.Manager, o Options, dr *reconcile.DrinkReconciler, copts controller.Options) error {
	id, err := o.identity()
	if err != nil {
		return err
	}
	s := *o.Sharding
	if s.Duration == 0 {
		s.Duration = 15 * time.Second
	}
	if s.Renew == 0 {
		s.Renew = 5 * time.Second
	}
	direct, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return err
	}
	log := mgr.GetLogger().WithName("shard")
	// One Drink controller runs per bucket served; together they run at
	// most --max-concurrent-reconciles reconciles at once, as the leader's
	// one controller would.
	slots := make(chan struct{}, max(1, copts.MaxConcurrentReconciles))
	syncs := make(chan struct{}, syncingBuckets)
	unselected := unselectedCounter(log)
	coordinator := &shard.Coordinator{
		Client: direct, Namespace: o.Namespace, Identity: id, Duration: s.Duration, Renew: s.Renew,
		Log: log,
		OnHeld: func(b []int) {
			shardBuckets.Set(float64(len(b)))
			shardHandovers.Inc()
		},
		Serve: func(ctx context.Context, bucket int) error {
			return serveBucket(ctx, cfg, mgr, o, dr, copts, bucketLimits{slots: slots, syncs: syncs, hold: syncSlotHold}, bucket, unselected)
		},
	}
	return mgr.Add(shareRunnable{coordinator})
}

// shareRunnable runs the coordinator on every replica, leader or not.
type shareRunnable struct{ c *shard.Coordinator }

func (r shareRunnable) Start(ctx context.Context) error { return r.c.Start(ctx) }
func (shareRunnable) NeedLeaderElection() bool          { return false }

// syncingBuckets is how many of a replica's bucket caches list at once.
// A replica that takes over a lost replica's buckets starts a cache for
// each, and each lists a whole bucket of Drinks and one of ConfigMaps (a
// watch that starts with them). The API server answers each such watch by
// going through every Drink, or every ConfigMap, in its watch cache (the
// sharded watch has no index), so a bucket's list costs it in proportion
// to all the Drinks, not to the bucket's; the replica then decodes the
// bucket and reconciles each of its Drinks once. Lists that run together
// hold up the writes of the buckets the replicas already serve, for longer
// the more of them there are: one at a time holds them up least
// (docs/sharding.md gives the measured waits).
const syncingBuckets = 1

// syncSlotHold is the longest a bucket's cache keeps its place among the
// syncingBuckets while it has not synced. A cache the API server does not
// fill (its list refused or failing) goes on retrying for as long as the
// bucket is served; holding its place meanwhile, one such bucket would
// keep every other bucket the replica takes from listing at all. A
// healthy bucket's cache syncs well within a minute even at the largest
// takeover measured (docs/sharding.md), so a minute gives up a place only
// where something is wrong.
const syncSlotHold = time.Minute

// bucketLimits are what a replica's bucket controllers share: slots, one
// held by each running reconcile, and syncs, one held by each cache until
// it has synced or for hold, whichever is shorter.
type bucketLimits struct {
	slots, syncs chan struct{}
	hold         time.Duration
}

// listInTurn calls list (start a cache and wait until it has synced) once
// one of lim.syncs is free, holding it until list returns or lim.hold has
// passed, whichever comes first; list goes on after that without it.
// ran is false, and list is not called, when ctx ends before a place
// is free.
func listInTurn(ctx context.Context, lim bucketLimits, list func() bool) (ran, synced bool) {
	select {
	case lim.syncs <- struct{}{}:
	case <-ctx.Done():
		return false, false
	}
	release := sync.OnceFunc(func() { <-lim.syncs })
	defer release()
	giveUp := time.AfterFunc(lim.hold, release)
	defer giveUp.Stop()
	return true, list()
}

// serveBucket runs a Drink controller over a cache of one bucket's Drinks
// and ConfigMaps until ctx ends, and returns when its last reconcile did.
// Its cache starts listing only in its turn (listInTurn); its reconciles
// run only while they hold one of lim.slots.
func serveBucket(ctx context.Context, cfg *rest.Config, mgr ctrl.Manager, o Options, dr *reconcile.DrinkReconciler,
	copts controller.Options, lim bucketLimits, bucket int, unselected func()) error {
	buckets := []int{bucket}
	inBucket, err := labels.NewRequirement(shard.BucketLabel, selection.Equals, []string{shard.BucketValue(bucket)})
	if err != nil {
		return err
	}
	managed, _ := managedBy.Requirements()
	selector := shard.Selector(buckets)
	matcher := shard.NewMatcher(buckets)
	share, err := cache.New(cfg, cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultTransform:  cache.TransformStripManagedFields(),
		DefaultNamespaces: servedNamespaces(o.WatchNamespaces),
		ByObject: map[client.Object]cache.ByObject{
			// The bucket's ConfigMaps, by the label the reconciler writes.
			&corev1.ConfigMap{}: {Label: labels.NewSelector().Add(managed...).Add(*inBucket), Transform: reconcile.TrimConfigMap},
			&drinksv1.Drink{}:   {Transform: reconcile.TrimDrink},
		},
		// The bucket's Drinks, by the API server's shard selector, which
		// controller-runtime has no option for.
		NewInformer: func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
			if _, ok := obj.(*drinksv1.Drink); ok {
				lw = withShardSelector(lw, selector, matcher, unselected)
			}
			return toolscache.NewSharedIndexInformer(lw, obj, resync, idx)
		},
	})
	if err != nil {
		return err
	}
	r := dr.ForShare(shareClient{Client: mgr.GetClient(), share: share}, &matcher)
	c, err := r.NewShareController(mgr, share, copts, lim.slots)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	ran, synced := listInTurn(ctx, lim, func() bool {
		return fillBucketCache(ctx, share, &wg, func(err error) {
			mgr.GetLogger().WithName("shard").Error(err, "the cache of a bucket stopped", "bucket", bucket)
		})
	})
	if !ran || (!synced && ctx.Err() != nil) {
		return nil
	}
	if !synced {
		return fmt.Errorf("the cache of bucket %d did not sync", bucket)
	}
	inShare := func(d *drinksv1.Drink) bool { ok, err := matcher.Matches(d); return err == nil && ok }
	wg.Go(func() { _ = (&reconcile.Inventory{Reader: share, NoGuestbooks: true, InShare: inShare}).Start(ctx) })
	return c.Start(ctx)
}

// fillBucketCache starts share with its Drink and ConfigMap informers and
// waits until both have listed, running share in wg and reporting an error
// it stops with to stopped. The informers are asked for before the cache
// starts: a controller-runtime cache makes an informer only when first
// asked for one, and its WaitForCacheSync waits only for the informers it
// has. Left to the controller's start, both lists would come after the
// wait, outside the bucket's turn, and every bucket taken at once would
// list at once (as the first takeovers measured did: docs/sharding.md).
func fillBucketCache(ctx context.Context, share cache.Cache, wg *sync.WaitGroup, stopped func(error)) bool {
	for _, obj := range []client.Object{&drinksv1.Drink{}, &corev1.ConfigMap{}} {
		if _, err := share.GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
			stopped(err)
			return false
		}
	}
	wg.Go(func() {
		if err := share.Start(ctx); err != nil {
			stopped(err)
		}
	})
	return share.WaitForCacheSync(ctx)
}

// withShardSelector sets selector on every list and watch of lw, and
// drops on the client whatever m does not match, calling outside for each:
// an API server without the ShardedListAndWatch feature gate ignores the
// selector and sends every Drink, and the bucket's cache must still hold
// only its own.
func withShardSelector(lw toolscache.ListerWatcher, selector string, m shard.Matcher, outside func()) toolscache.ListerWatcher {
	inner := toolscache.ToListerWatcherWithContext(lw)
	keep := func(o runtime.Object) bool {
		if in, err := m.Matches(o); err == nil && !in {
			outside()
			return false
		}
		return true
	}
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.ShardSelector = selector
			list, err := inner.ListWithContext(ctx, opts)
			if err != nil {
				return nil, err
			}
			items, err := meta.ExtractList(list)
			if err != nil {
				return nil, err
			}
			n := len(items)
			kept := slices.DeleteFunc(items, func(o runtime.Object) bool { return !keep(o) })
			if len(kept) < n {
				if err := meta.SetList(list, kept); err != nil {
					return nil, err
				}
			}
			return list, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.ShardSelector = selector
			w, err := inner.WatchWithContext(ctx, opts)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				switch e.Type {
				case watch.Added, watch.Modified, watch.Deleted:
					return e, keep(e.Object)
				}
				return e, true // bookmarks and errors
			}), nil
		},
	}
}

// unselectedCounter counts each Drink the API server sent outside the
// bucket a cache asked for: the server ignored the selector. It says so
// once per manager in the log, and for every such Drink in a metric,
// because the replica then receives every Drink once per bucket it holds.
func unselectedCounter(log logr.Logger) func() {
	var once sync.Once
	return func() {
		shardUnselected.Inc()
		once.Do(func() {
			log.Info("the API server sent Drinks outside this replica's buckets: it ignores the shard selector " +
				"(is kube-apiserver's ShardedListAndWatch feature gate on?); filtering on the client, receiving every Drink once per bucket held")
		})
	}
}

// shareClient reads Drinks and ConfigMaps from the share's cache and
// everything else as the manager's client does.
type shareClient struct {
	client.Client
	share cache.Cache
}

func (c shareClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	switch obj.(type) {
	case *drinksv1.Drink, *corev1.ConfigMap:
		return c.share.Get(ctx, key, obj, opts...)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c shareClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	switch list.(type) {
	case *drinksv1.DrinkList, *corev1.ConfigMapList:
		return c.share.List(ctx, list, opts...)
	}
	return c.Client.List(ctx, list, opts...)
}

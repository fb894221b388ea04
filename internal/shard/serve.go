package shard

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
)

// Options configure the replica's share of the Drinks (Setup).
type Options struct {
	// Namespace is the operator's: the member and bucket Leases are there.
	Namespace string
	// Identity is the replica's name among the members, its pod's; empty
	// is the host's name (outside a pod).
	Identity string
	// Duration is how long a replica that stopped renewing its member
	// Lease still counts as a member; Renew how often each replica renews
	// it (it reads the others' every second: lookPeriod). Zero uses 15 s
	// and 5 s.
	Duration, Renew time.Duration
	// Namespaces are the served namespaces, as the manager cache's
	// DefaultNamespaces: nil is every namespace.
	Namespaces map[string]cache.Config
	// ConfigMaps selects the Drinks' ConfigMaps (the operator's label), to
	// which each bucket's cache adds BucketLabel.
	ConfigMaps labels.Selector
	// TrimDrink and TrimConfigMap are the transforms the manager's cache
	// applies to these kinds: a bucket's cache holds the same objects, and
	// the reconciler reads them as it would from the manager's.
	TrimDrink, TrimConfigMap toolscache.TransformFunc
	// Controller are the options of the Drink controllers; together the
	// controllers of every bucket served run at most its
	// MaxConcurrentReconciles reconciles at once, as the leader's one
	// controller would.
	Controller controller.Options
}

// Reconciler is the one hook the runtime needs of the Drink reconciler:
// the controller of a set of buckets. It is an interface because the
// reconciler's package imports this one (for Matcher and BucketLabel).
type Reconciler interface {
	// ShareController builds what serves s: the runtime starts it once
	// s.Cache has synced and ends its context when the buckets move
	// together, and it must return only after its last write for them.
	ShareController(mgr ctrl.Manager, s Share) (manager.Runnable, error)
}

// Share is the buckets of the Drinks one controller serves, as it sees
// them.
type Share struct {
	// Served is the buckets served now: the cache may hold Drinks outside
	// them (an API server without the feature gate, or a bucket dropped
	// since the cache started). A reconcile runs inside Served.Hold and
	// writes only for a Drink Served matches.
	Served *Served
	// Cache holds the buckets' Drinks and their ConfigMaps; Client reads
	// those from Cache and everything else, and writes, as the manager's
	// client does.
	Cache  cache.Cache
	Client client.Client
	// Slots are the reconciles running at once: a reconcile holds one,
	// and every bucket of the replica shares them.
	Slots chan struct{}
	// Options are Options.Controller.
	Options controller.Options
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

// Setup adds to mgr what serves this replica's share of the Drinks, in
// place of the leader's Drink controller: a Coordinator that runs on
// every replica, leader or not, and for the buckets it takes at each
// handover one cache of them and r's controller over it.
func Setup(mgr ctrl.Manager, o Options, r Reconciler) error {
	id := o.Identity
	if id == "" {
		var err error
		if id, err = os.Hostname(); err != nil {
			return err
		}
	}
	if o.Duration == 0 {
		o.Duration = 15 * time.Second
	}
	if o.Renew == 0 {
		o.Renew = 5 * time.Second
	}
	direct, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return err
	}
	log := mgr.GetLogger().WithName("shard")
	lim := bucketLimits{
		slots: make(chan struct{}, max(1, o.Controller.MaxConcurrentReconciles)),
		syncs: make(chan struct{}, syncingBuckets),
		hold:  syncSlotHold,
	}
	unselected := unselectedCounter(log)
	coordinator := &Coordinator{
		Client: direct, Namespace: o.Namespace, Identity: id, Duration: o.Duration, Renew: o.Renew,
		Log: log,
		OnHeld: func(b []int) {
			shardBuckets.Set(float64(len(b)))
			shardHandovers.Inc()
		},
		Serve: func(ctx context.Context, served *Served) error {
			return serveBuckets(ctx, mgr, o, r, lim, served, unselected)
		},
	}
	return mgr.Add(everyReplica{coordinator})
}

// everyReplica runs the coordinator on every replica, leader or not.
type everyReplica struct{ c *Coordinator }

func (r everyReplica) Start(ctx context.Context) error { return r.c.Start(ctx) }
func (everyReplica) NeedLeaderElection() bool          { return false }

// syncingBuckets is how many of a replica's caches list at once. A cache
// lists its buckets' Drinks and ConfigMaps (a watch that starts with
// them). The API server answers each such watch by going through every
// Drink, or every ConfigMap, in its watch cache (the sharded watch has no
// index), so a list costs it in proportion to all the Drinks, not to the
// buckets'; the replica then decodes them and reconciles each Drink once.
// Lists that run together hold up the writes of the buckets the replicas
// already serve, for longer the more of them there are: one at a time
// holds them up least (docs/sharding.md gives the measured waits). A
// takeover is one cache per replica (Coordinator.Serve); caches wait for
// one another after a failed one restarts, or handovers come quickly.
const syncingBuckets = 1

// syncSlotHold is the longest a cache keeps its place among the
// syncingBuckets while it has not synced. A cache the API server does not
// fill (its list refused or failing) goes on retrying for as long as its
// buckets are served; holding its place meanwhile, it would keep every
// other cache the replica starts from listing at all. A healthy cache
// syncs well within a minute even at the largest takeover measured
// (docs/sharding.md), so a minute gives up a place only where something
// is wrong.
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

// shareCacheOptions are the options of the cache of served's buckets: their
// Drinks, by the API server's shard selector, and their ConfigMaps, by the
// bucket label, each through its trim, and reduced to their names once
// served drops their bucket.
func shareCacheOptions(o Options, served *Served, unselected func()) (cache.Options, error) {
	buckets := served.Started()
	values := make([]string, len(buckets))
	for i, b := range buckets {
		values[i] = BucketValue(b)
	}
	inBuckets, err := labels.NewRequirement(BucketLabel, selection.In, values)
	if err != nil {
		return cache.Options{}, err
	}
	managed, _ := o.ConfigMaps.Requirements()
	selector := Selector(buckets)
	matcher := NewMatcher(buckets)
	return cache.Options{
		DefaultTransform:  cache.TransformStripManagedFields(),
		DefaultNamespaces: o.Namespaces,
		ByObject: map[client.Object]cache.ByObject{
			// The buckets' ConfigMaps, by the label the reconciler writes.
			&corev1.ConfigMap{}: {Label: labels.NewSelector().Add(managed...).Add(*inBuckets), Transform: served.IdentityOfDropped(o.TrimConfigMap)},
			&drinksv1.Drink{}:   {Transform: served.IdentityOfDropped(o.TrimDrink)},
		},
		// The buckets' Drinks, by the API server's shard selector, which
		// controller-runtime has no option for.
		NewInformer: func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
			return toolscache.NewSharedIndexInformer(shareListerWatcher(lw, obj, selector, matcher, unselected), obj, resync, idx)
		},
	}, nil
}

// shareListerWatcher is how a share's cache lists and watches obj's kind:
// the Drinks by the shard selector (withShardSelector), and both kinds by a
// LIST and then a watch from its resourceVersion (listThenWatch).
func shareListerWatcher(lw toolscache.ListerWatcher, obj runtime.Object, selector string, m Matcher, unselected func()) toolscache.ListerWatcher {
	if _, ok := obj.(*drinksv1.Drink); ok {
		lw = withShardSelector(lw, selector, m, unselected)
	}
	return listThenWatchOf(lw)
}

// serveBuckets runs r's controller over one cache of the Drinks and
// ConfigMaps of served's buckets until ctx ends, and returns when its last
// reconcile did. Its cache starts listing only in its turn (listInTurn);
// its reconciles run only while they hold one of lim.slots.
func serveBuckets(ctx context.Context, mgr ctrl.Manager, o Options, r Reconciler, lim bucketLimits, served *Served, unselected func()) error {
	buckets := served.Started()
	opts, err := shareCacheOptions(o, served, unselected)
	if err != nil {
		return err
	}
	opts.Scheme, opts.Mapper = mgr.GetScheme(), mgr.GetRESTMapper()
	share, err := cache.New(mgr.GetConfig(), opts)
	if err != nil {
		return err
	}
	c, err := r.ShareController(mgr, Share{Served: served, Cache: share,
		Client: shareClient{Client: mgr.GetClient(), share: share}, Slots: lim.slots, Options: o.Controller})
	if err != nil {
		return err
	}
	// Deferred in this order so that they run cancel first, then wait: a
	// controller that stops on its own (an error) stops the buckets' cache
	// too, and the coordinator gets the error and tries again, rather than
	// this waiting for ctx forever.
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ran, synced := listInTurn(ctx, lim, func() bool {
		return fillBucketCache(ctx, share, &wg, func(err error) {
			mgr.GetLogger().WithName("shard").Error(err, "the cache of buckets stopped", "buckets", buckets)
		})
	})
	if !ran || (!synced && ctx.Err() != nil) {
		return nil
	}
	if !synced {
		return fmt.Errorf("the cache of buckets %v did not sync", buckets)
	}
	return c.Start(ctx)
}

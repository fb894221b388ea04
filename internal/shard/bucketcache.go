package shard

import (
	"context"
	"slices"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
)

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
func withShardSelector(lw toolscache.ListerWatcher, selector string, m Matcher, outside func()) toolscache.ListerWatcher {
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

// listThenWatch is a ListerWatcher whose reflector lists and then watches
// from the list's resourceVersion, rather than asking for a watch that
// streams the current objects first (client-go's WatchListClient, on by
// default): the reflector takes IsWatchListSemanticsUnSupported's word.
//
// Why, for a share's cache: the API server gives a watch a buffer of at
// most 100 events (for a kind without a watch cache index), and while it
// streams the watch's first objects it takes none from it. A takeover at
// 200,000 Drinks streams for 5 to 15 s while the Drinks still change; the
// buffer filled, the API server closed the watch, and the reflector
// started again with a LIST. In the eighth 200,000 kill (commit 07d2e7b)
// 9 watches were closed in the window, and the API server went through
// its 200,000 Drinks 5 times, and as often through its ConfigMaps, where
// the three survivors needed 3 (the record's API window,
// test/bench/results/HISTORY.md). A LIST has no such buffer, and the
// watch after it starts with nothing to send.
type listThenWatch struct{ *toolscache.ListWatch }

// IsWatchListSemanticsUnSupported tells the reflector to list.
func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

// listThenWatchOf is lw as a listThenWatch.
func listThenWatchOf(lw toolscache.ListerWatcher) toolscache.ListerWatcher {
	inner := toolscache.ToListerWatcherWithContext(lw)
	return listThenWatch{&toolscache.ListWatch{ListWithContextFunc: inner.ListWithContext, WatchFuncWithContext: inner.WatchWithContext}}
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

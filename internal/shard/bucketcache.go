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

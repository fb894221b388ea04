package operandcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Watch is a kind the controller watches in every operand namespace, and how
// its events map to requests.
type Watch struct {
	Object  client.Object
	Handler handler.EventHandler
}

// Caches holds one started cache per namespace. Add it to the manager (it
// runs on the leader only, like the controller that uses it) and set
// Controller before the first Get.
type Caches struct {
	// Config and Options build each namespace's cache; Options'
	// DefaultNamespaces is set to the one namespace.
	Config  *rest.Config
	Options cache.Options
	// Watches are registered on Controller for each new namespace.
	Watches    []Watch
	Controller controller.Controller
	// SyncTimeout bounds the wait for a new cache to fill; zero is 30 s.
	SyncTimeout time.Duration

	mu      sync.Mutex
	ctx     context.Context
	started chan struct{}
	byNS    map[string]*entry
}

type entry struct {
	cache  cache.Cache
	cancel context.CancelFunc
}

// ErrNotStarted is returned when the manager has not started Caches.
var ErrNotStarted = errors.New("operand caches not started")

func (c *Caches) init() {
	if c.started == nil {
		c.started = make(chan struct{})
		c.byNS = map[string]*entry{}
	}
}

// Start records the manager's context, under which every namespace cache
// runs, and blocks until it ends.
func (c *Caches) Start(ctx context.Context) error {
	c.mu.Lock()
	c.init()
	c.ctx = ctx
	close(c.started)
	c.mu.Unlock()
	<-ctx.Done()
	return nil
}

// NeedLeaderElection is true: only the leader reconciles operands.
func (c *Caches) NeedLeaderElection() bool { return true }

// Get returns the synced cache of namespace ns, creating, starting and
// watching it on first use.
func (c *Caches) Get(ctx context.Context, ns string) (client.Reader, error) {
	c.mu.Lock()
	c.init()
	started := c.started
	c.mu.Unlock()
	select {
	case <-started:
	case <-ctx.Done():
		return nil, ErrNotStarted
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byNS[ns]; ok {
		return e.cache, nil
	}
	opts := c.Options
	opts.DefaultNamespaces = map[string]cache.Config{ns: {}}
	nc, err := cache.New(c.Config, opts)
	if err != nil {
		return nil, fmt.Errorf("cache for namespace %s: %w", ns, err)
	}
	cctx, cancel := context.WithCancel(c.ctx)
	go func() { _ = nc.Start(cctx) }()
	for _, w := range c.Watches {
		if err := c.Controller.Watch(source.Kind(nc, w.Object, w.Handler)); err != nil {
			cancel()
			return nil, fmt.Errorf("watching %T in namespace %s: %w", w.Object, ns, err)
		}
	}
	timeout := c.SyncTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	sctx, scancel := context.WithTimeout(ctx, timeout)
	defer scancel()
	if !nc.WaitForCacheSync(sctx) {
		cancel()
		return nil, fmt.Errorf("the cache of namespace %s did not sync within %s (can the operator list pods, StatefulSets, Services, NetworkPolicies and ConfigMaps there?)", ns, timeout)
	}
	c.byNS[ns] = &entry{cache: nc, cancel: cancel}
	return nc, nil
}

// Known returns the namespaces that have a cache.
func (c *Caches) Known() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.byNS))
	for ns := range c.byNS {
		out = append(out, ns)
	}
	return out
}

// Forget stops the cache of ns, for a namespace the operator left.
func (c *Caches) Forget(ns string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byNS[ns]; ok {
		e.cancel()
		delete(c.byNS, ns)
	}
}

package freshread

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Group shares the reads of values of type T by key. The zero Group is not
// usable: make one with New.
type Group[T any] struct {
	limiter *rate.Limiter
	timeout time.Duration

	mu   sync.Mutex
	keys map[string]*key[T]
}

// key is the state of one key: the read running, if any, and the read
// queued to start after it, which every caller that arrives meanwhile
// joins.
type key[T any] struct {
	running, queued *call[T]
}

type call[T any] struct {
	done chan struct{}
	val  T
	err  error
}

// New returns a Group that makes at most perSecond reads a second, burst
// at once, each given at most timeout.
func New[T any](perSecond float64, burst int, timeout time.Duration) *Group[T] {
	return &Group[T]{limiter: rate.NewLimiter(rate.Limit(perSecond), burst), timeout: timeout, keys: map[string]*key[T]{}}
}

// Do returns the result of a read of key that began after Do was called:
// the one queued, which it joins, or a new one. read must not depend on
// the caller's context (another caller's result comes from it); it gets a
// context of its own, bounded by the Group's timeout. A caller whose
// context ends first gets its error; the read goes on for the others.
func (g *Group[T]) Do(ctx context.Context, name string, read func(context.Context) (T, error)) (T, error) {
	g.mu.Lock()
	k := g.keys[name]
	if k == nil {
		k = &key[T]{}
		g.keys[name] = k
	}
	var c *call[T]
	switch {
	case k.queued != nil:
		// It starts after the read running now ends, so after this call.
		c = k.queued
	case k.running == nil:
		c = &call[T]{done: make(chan struct{})}
		k.running = c
		go g.run(name, k, c, read)
	default:
		// The running read began before this call: its result may be
		// older than what the caller must see.
		c = &call[T]{done: make(chan struct{})}
		k.queued = c
		prev := k.running
		go func() {
			<-prev.done
			g.run(name, k, c, read)
		}()
	}
	g.mu.Unlock()
	select {
	case <-c.done:
		return c.val, c.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// run makes the read of c once the limiter allows it, then hands the key
// to the queued read, or forgets the key.
func (g *Group[T]) run(name string, k *key[T], c *call[T], read func(context.Context) (T, error)) {
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	g.mu.Lock()
	if k.running != c { // c was queued: it runs now
		k.running, k.queued = c, nil
	}
	g.mu.Unlock()
	if c.err = g.limiter.Wait(ctx); c.err == nil {
		c.val, c.err = read(ctx)
	}
	g.mu.Lock()
	if k.queued == nil {
		k.running = nil
		delete(g.keys, name)
	}
	g.mu.Unlock()
	close(c.done)
}

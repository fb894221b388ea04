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
	// every, when set, lets the reads of a key overlap, each starting at
	// least every after the last (Overlapping).
	every time.Duration

	mu   sync.Mutex
	keys map[string]*key[T]
}

// key is the state of one key: the read running, if any, and the read
// queued to start after it, which every caller that arrives meanwhile
// joins.
type key[T any] struct {
	running, queued *call[T]
	// With Overlapping: the start of the newest read (queued, until it
	// begins, is the one new callers join), how many have not ended, and
	// a slot held by each read running (at most maxOverlapping).
	last     time.Time
	inflight int
	slots    chan struct{}
}

// maxOverlapping is how many reads of a key run at once with Overlapping.
// A read begins once one of the two before it has ended: the slower the
// reads, the fewer are made and the more callers share each, so that a
// loaded API server is not sent more reads for being slow. With reads of
// 0.23 s begun every 20 ms, each fenced write of a 50,000-Drink benchmark
// had a read of its own (docs/sharding.md); two at once still let a
// caller wait for about one read and a half, not two.
const maxOverlapping = 2

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

// Overlapping makes g start a read of a key while another runs, at least
// every apart, rather than only after it ended: a caller then waits for
// about one read, not for the end of the one running and then its own,
// where reads are slow (the API server's consistent reads wait for its
// cache to catch up with etcd, a tenth of a second or more under load);
// the callers that arrive before a read begins still share it, reads of a
// key come at most 1/every a second, and at most maxOverlapping run at
// once. It returns g.
func (g *Group[T]) Overlapping(every time.Duration) *Group[T] {
	g.every = every
	return g
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
		if g.every > 0 {
			k.slots = make(chan struct{}, maxOverlapping)
		}
		g.keys[name] = k
	}
	var c *call[T]
	switch {
	case g.every > 0:
		if c = k.queued; c == nil {
			// No read waits to begin: one begins every after the last.
			c = &call[T]{done: make(chan struct{})}
			k.queued = c
			k.last = k.last.Add(g.every)
			if now := time.Now(); now.After(k.last) {
				k.last = now
			}
			k.inflight++
			go g.runOverlapping(name, k, c, k.last, read)
		}
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

// runOverlapping makes the read of c from start on, once fewer than
// maxOverlapping reads of the key run and the limiter allows it; callers
// join c until its read begins.
func (g *Group[T]) runOverlapping(name string, k *key[T], c *call[T], start time.Time, read func(context.Context) (T, error)) {
	time.Sleep(time.Until(start))
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	select {
	case k.slots <- struct{}{}:
		defer func() { <-k.slots }()
		c.err = g.limiter.Wait(ctx)
	case <-ctx.Done():
		c.err = ctx.Err()
	}
	g.mu.Lock()
	if k.queued == c {
		k.queued = nil
	}
	g.mu.Unlock()
	if c.err == nil {
		c.val, c.err = read(ctx)
	}
	g.mu.Lock()
	if k.inflight--; k.inflight == 0 && k.queued == nil && time.Since(k.last) >= g.every {
		delete(g.keys, name)
	}
	g.mu.Unlock()
	close(c.done)
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

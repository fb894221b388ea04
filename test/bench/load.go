package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Load is what a pool of workers did.
type Load struct {
	Latencies []time.Duration
	Elapsed   time.Duration
	Errors    int
	FirstErr  error
}

// runWorkers calls do with the indexes next hands out, on w workers at once,
// until next says stop or ctx ends, and times every call. Workers take the
// next index as soon as they finish one, so the pool keeps exactly w
// requests in flight: the concurrency the ceiling sweep varies.
func runWorkers(ctx context.Context, w int, next func() (int, bool), do func(ctx context.Context, i int) error) Load {
	var (
		mu   sync.Mutex
		load Load
		wg   sync.WaitGroup
	)
	start := time.Now()
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for ctx.Err() == nil {
				i, ok := next()
				if !ok {
					break
				}
				t := time.Now()
				err := do(ctx, i)
				mine = append(mine, time.Since(t))
				if err != nil {
					mu.Lock()
					load.Errors++
					if load.FirstErr == nil {
						load.FirstErr = err
					}
					mu.Unlock()
				}
			}
			mu.Lock()
			load.Latencies = append(load.Latencies, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	load.Elapsed = time.Since(start)
	return load
}

// upTo hands out 0..n-1.
func upTo(n int) func() (int, bool) {
	var i atomic.Int64
	return func() (int, bool) {
		v := int(i.Add(1) - 1)
		return v, v < n
	}
}

// until hands out increasing indexes until d has passed.
func until(d time.Duration) func() (int, bool) {
	var i atomic.Int64
	deadline := time.Now().Add(d)
	return func() (int, bool) {
		return int(i.Add(1) - 1), time.Now().Before(deadline)
	}
}

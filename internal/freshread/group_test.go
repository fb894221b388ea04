package freshread

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSharedAndFresh: callers that arrive while a read runs all get the
// one read queued after it, never the running one's value, and the reads
// of a key never overlap.
func TestSharedAndFresh(t *testing.T) {
	g := New[int](1000, 1000, time.Second)
	var reads, running, overlapped atomic.Int32
	release := make(chan struct{})
	read := func(context.Context) (int, error) {
		if running.Add(1) > 1 {
			overlapped.Add(1)
		}
		defer running.Add(-1)
		n := int(reads.Add(1))
		if n == 1 {
			<-release // the first read runs until every later caller asked
		}
		return n, nil
	}
	first, got, wg := firstThenLater(g, read, func() bool { return reads.Load() > 0 })
	time.Sleep(50 * time.Millisecond) // every later caller is waiting
	close(release)
	wg.Wait()
	if v := <-first; v != 1 {
		t.Errorf("the first caller got read %d, want 1", v)
	}
	for i, v := range got {
		if v != 2 {
			t.Errorf("caller %d, which asked while read 1 ran, got read %d, want 2", i, v)
		}
	}
	if n := reads.Load(); n != 2 {
		t.Errorf("%d reads for 1+%d callers, want 2", n, len(got))
	}
	if n := overlapped.Load(); n != 0 {
		t.Errorf("%d reads of the key overlapped another", n)
	}
}

// TestRateBound: however many keys callers ask for, reads start at most at
// the Group's rate (after its burst).
func TestRateBound(t *testing.T) {
	const perSecond, burst = 20, 5
	g := New[string](perSecond, burst, 5*time.Second)
	var reads atomic.Int32
	read := func(context.Context) (string, error) { reads.Add(1); return "", nil } //nolint:unparam // a Group's read
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 500 {
		wg.Go(func() { _, _ = g.Do(ctx, fmt.Sprintf("pod-%d", i), read) })
	}
	wg.Wait()
	// Reads that had started when the callers gave up.
	if n, most := reads.Load(), int32(burst+perSecond/2+1); n > most {
		t.Errorf("%d reads in 0.5 s for 500 keys, want at most %d (%d a second, burst %d)", n, most, perSecond, burst)
	}
}

// TestCallerGivesUp: a caller whose context ends gets its error at once;
// the read goes on and answers the callers still waiting.
func TestCallerGivesUp(t *testing.T) {
	g := New[int](1000, 1000, time.Second)
	release := make(chan struct{})
	read := func(context.Context) (int, error) { <-release; return 7, nil } //nolint:unparam // a Group's read
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error)
	go func() { _, err := g.Do(ctx, "k", read); gaveUp <- err }()
	waited := make(chan int)
	time.Sleep(10 * time.Millisecond)
	go func() { v, _ := g.Do(context.Background(), "k", read); waited <- v }()
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Errorf("the caller that gave up got %v, want context.Canceled", err)
	}
	close(release)
	if v := <-waited; v != 7 {
		t.Errorf("the caller that waited got %d, want 7", v)
	}
}

// TestOverlappingSharedAndFresh: with Overlapping, callers that arrive
// while a read runs get a read that began after they asked, without
// waiting for the running one to end; the callers that arrive before it
// begins share it; and the reads of a key begin at least every apart.
func TestOverlappingSharedAndFresh(t *testing.T) {
	const every = 100 * time.Millisecond
	g := New[int](1000, 1000, 5*time.Second).Overlapping(every)
	var mu sync.Mutex
	var starts []time.Time
	release := make(chan struct{})
	read := func(context.Context) (int, error) {
		mu.Lock()
		starts = append(starts, time.Now())
		n := len(starts)
		mu.Unlock()
		if n == 1 {
			<-release // the first read outlasts the test's later callers
		}
		return n, nil
	}
	first, got, wg := firstThenLater(g, read, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(starts) > 0
	})
	answered := make(chan struct{})
	go func() { wg.Wait(); close(answered) }()
	select {
	case <-answered: // while the first read still runs
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("the later callers waited for the read running when they asked to end")
	}
	close(release)
	if v := <-first; v != 1 {
		t.Errorf("the first caller got read %d, want 1", v)
	}
	for i, v := range got {
		if v != 2 {
			t.Errorf("caller %d, which asked while read 1 ran, got read %d, want 2 (begun after it asked, shared)", i, v)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(starts) != 2 {
		t.Fatalf("%d reads for 1+%d callers, want 2", len(starts), len(got))
	}
	if gap := starts[1].Sub(starts[0]); gap < every {
		t.Errorf("the second read began %s after the first, want at least %s", gap, every)
	}
}

// TestOverlappingSpacedBySlowReads: with Overlapping, no more than
// maxOverlapping reads run at once, so reads that take long begin further
// apart than every and callers arriving all the time share few of them;
// each caller still gets a read that began after it asked.
func TestOverlappingSpacedBySlowReads(t *testing.T) {
	const took = 200 * time.Millisecond
	g := New[int](1000, 1000, 5*time.Second).Overlapping(time.Millisecond)
	var mu sync.Mutex
	var starts []time.Time
	read := func(ctx context.Context) (int, error) {
		mu.Lock()
		starts = append(starts, time.Now())
		n := len(starts)
		mu.Unlock()
		time.Sleep(took)
		return n, ctx.Err()
	}
	// Callers every 5 ms for 2 s: with reads a millisecond apart, about
	// one read each.
	var wg sync.WaitGroup
	stale := atomic.Int32{}
	began := time.Now()
	for range 400 {
		asked := time.Now()
		wg.Go(func() {
			n, _ := g.Do(context.Background(), "k", read)
			mu.Lock()
			defer mu.Unlock()
			if starts[n-1].Before(asked) {
				stale.Add(1)
			}
		})
		time.Sleep(5 * time.Millisecond)
	}
	asking := time.Since(began)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if n := stale.Load(); n > 0 {
		t.Errorf("%d callers got a read that began before they asked", n)
	}
	// With two reads at once, a read begins only as one ends: two at the
	// start, then at most two every read's time while callers ask and
	// until a read's time after (for the last callers' read), and a few
	// to spare. A loaded machine makes the asking longer and the reads
	// slower, not the bound wrong; unbounded, there is a read per caller.
	if limit := int((asking+took)/(took/2)) + 6; len(starts) > limit {
		t.Errorf("%d reads of %s each for 400 callers over %s, want at most %d: slow reads are not spaced by their time", len(starts), took, asking.Round(time.Millisecond), limit)
	}
	t.Logf("%d reads for 400 callers over %s", len(starts), asking.Round(time.Millisecond))
}

// firstThenLater asks g for key "k" once, waits until started says its
// read runs, and then asks 50 times more, each in a goroutine of wg.
func firstThenLater(g *Group[int], read func(context.Context) (int, error), started func() bool) (first chan int, got []int, wg *sync.WaitGroup) {
	first = make(chan int, 1)
	go func() {
		v, _ := g.Do(context.Background(), "k", read)
		first <- v
	}()
	for !started() {
		time.Sleep(time.Millisecond)
	}
	got = make([]int, 50)
	wg = &sync.WaitGroup{}
	for i := range got {
		wg.Go(func() { got[i], _ = g.Do(context.Background(), "k", read) })
	}
	return first, got, wg
}

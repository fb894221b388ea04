package shard

import (
	"slices"
	"testing"
	"time"
)

// TestStopLosing: a Serve call that loses some of its buckets drops them
// and goes on serving the rest, not listing them again, until its dropped
// buckets (still in its cache) would be more than a quarter of those it
// serves: then it ends, and the step lists what it kept in a call of its
// own. A drop waits for the reconciles that began before it.
func TestStopLosing(t *testing.T) {
	tests := []struct {
		name           string
		started        []int
		droppedBefore  []int
		keep           []int
		wantChanged    bool
		wantEnded      bool
		wantServedLeft []int
	}{
		{"loses nothing: goes on", []int{1, 2, 3}, nil, []int{1, 2, 3, 9}, false, false, []int{1, 2, 3}},
		{"loses one of five: drops it", []int{1, 2, 3, 4, 5}, nil, []int{1, 2, 3, 4}, true, false, []int{1, 2, 3, 4}},
		{"loses three of sixteen: drops them", upTo(16), nil, upTo(13), true, false, upTo(13)},
		{"loses four of sixteen: ends", upTo(16), nil, upTo(12), true, true, upTo(12)},
		{"loses one of four: ends", []int{1, 2, 3, 4}, nil, []int{1, 2, 3}, true, true, []int{1, 2, 3}},
		{"loses all: ends", []int{1, 2}, nil, []int{7}, true, true, nil},
		{"earlier drops count: one more ends it", upTo(16), []int{13, 14, 15}, upTo(12), true, true, upTo(12)},
		{"earlier drops count: up to a quarter goes on", upTo(11), []int{10}, upTo(9), true, false, upTo(9)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			served := NewServed(tc.started)
			served.Drop(tc.droppedBefore)()
			done := make(chan struct{})
			ended := false
			r := &run{served: served, done: done, cancel: func() {
				if !ended {
					ended = true
					close(done)
				}
			}}
			c := &Coordinator{serving: []*run{r}}
			if got := c.stopLosing(tc.keep); got != tc.wantChanged {
				t.Errorf("changed = %v, want %v", got, tc.wantChanged)
			}
			if ended != tc.wantEnded {
				t.Errorf("ended = %v, want %v", ended, tc.wantEnded)
			}
			if got := slices.Contains(c.serving, r); got == tc.wantEnded {
				t.Errorf("still among the calls served: %v, want %v", got, !tc.wantEnded)
			}
			if got := served.Buckets(); !slices.Equal(got, tc.wantServedLeft) {
				t.Errorf("serves %v, want %v", got, tc.wantServedLeft)
			}
		})
	}
}

// TestDropWaitsForReconciles: Drop returns only after a reconcile that
// began before it (inside Hold) has returned, and not after one that
// began later; a reconcile that begins while a Drop waits goes on at once
// and no longer matches the dropped bucket. Behind a lock that prefers the
// writer, that reconcile waited for the ones from before the drop, and
// every reconcile slot of the replica with it.
func TestDropWaitsForReconciles(t *testing.T) {
	served := NewServed([]int{3, 5})
	releaseOld := served.Hold()
	returned := dropAndWait(served, 5)
	held := make(chan func())
	go func() { held <- served.Hold() }()
	var releaseNew func()
	select {
	case releaseNew = <-held:
	case <-time.After(5 * time.Second):
		t.Fatal("a reconcile that began during a Drop waited for the reconciles from before it")
	}
	select {
	case <-returned:
		t.Fatal("Drop returned while a reconcile that began before it runs")
	case <-time.After(100 * time.Millisecond):
	}
	releaseOld()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("Drop did not return once the reconcile from before it did (or waited for one that began after it)")
	}
	if got := served.Buckets(); !slices.Equal(got, []int{3}) {
		t.Errorf("serves %v after dropping 5, want [3]", got)
	}
	if got := served.Started(); !slices.Equal(got, []int{3, 5}) {
		t.Errorf("started %v, want [3 5]: the cache still selects what it listed", got)
	}
	releaseNew()
	// The next Drop waits for nothing: every reconcile has returned.
	served.Drop([]int{3})()
}

// TestStopLosingDropsEverywhereBeforeWaiting: a step that drops buckets
// from two calls, each with a reconcile running, drops from both at once
// and then waits for both: while the first call's reconcile still runs,
// the second already no longer serves what it lost. Waiting for each call
// in turn would add up the reconciles' times (a fenced write may take the
// webhook's whole timeout).
func TestStopLosingDropsEverywhereBeforeWaiting(t *testing.T) {
	a, b := NewServed(upTo(8)), NewServed([]int{8, 9, 10, 11, 12, 13, 14, 15})
	c := &Coordinator{serving: []*run{
		{served: a, done: make(chan struct{}), cancel: func() {}},
		{served: b, done: make(chan struct{}), cancel: func() {}},
	}}
	releaseA, releaseB := a.Hold(), b.Hold()
	returned := make(chan struct{})
	go func() {
		c.stopLosing(without(upTo(16), []int{7, 15}))
		close(returned)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for slices.Contains(a.Buckets(), 7) || slices.Contains(b.Buckets(), 15) {
		if time.Now().After(deadline) {
			t.Fatalf("serving %v and %v while both calls' reconciles run: each call's drop waited for the one before it", a.Buckets(), b.Buckets())
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-returned:
		t.Fatal("stopLosing returned while reconciles that began before the drops run")
	case <-time.After(100 * time.Millisecond):
	}
	releaseA()
	releaseB()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("stopLosing did not return once the reconciles did")
	}
}

// dropAndWait drops buckets from served and waits for the drop in the
// background: the channel closes once the wait returned.
func dropAndWait(served *Served, buckets ...int) <-chan struct{} {
	returned := make(chan struct{})
	wait := served.Drop(buckets)
	go func() {
		wait()
		close(returned)
	}()
	return returned
}

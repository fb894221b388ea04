package shard

import (
	"context"
	"testing"
	"time"
)

// TestListInTurn: with two places to list, two bucket caches that never
// sync (their lists hang until the bucket is given up) hold theirs only
// for the hold, and a third bucket then lists; with a hold longer than the
// test, the third never starts. A list that returns gives its place back
// at once, and a bucket given up while waiting for a place never lists.
func TestListInTurn(t *testing.T) {
	tests := []struct {
		name      string
		hold      time.Duration
		wantThird bool
	}{
		{"hung lists give their places up after the hold", 50 * time.Millisecond, true},
		{"hung lists within the hold keep their places", time.Hour, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			lim := bucketLimits{syncs: make(chan struct{}, 2), hold: tc.hold}
			hung := make(chan struct{}, 2)
			for range 2 {
				go listInTurn(ctx, lim, func() bool {
					hung <- struct{}{}
					<-ctx.Done() // a cache the API server never fills
					return false
				})
			}
			<-hung
			<-hung
			third := make(chan bool, 1)
			go func() {
				_, synced := listInTurn(ctx, lim, func() bool { return true })
				third <- synced
			}()
			// A liveness bound, not a speed target: the third needs only
			// the hold to pass; the other case cannot start at all.
			wait := 10 * time.Second
			if !tc.wantThird {
				wait = 300 * time.Millisecond
			}
			select {
			case synced := <-third:
				if !tc.wantThird {
					t.Fatal("a third bucket listed while two hung lists held both places within their hold")
				}
				if !synced {
					t.Error("the third bucket's list returned true, listInTurn said false")
				}
			case <-time.After(wait):
				if tc.wantThird {
					t.Fatalf("a third bucket did not list within %s of two lists hung past their %s hold", wait, tc.hold)
				}
			}
		})
	}
}

// TestListInTurnReleasesAndGivesUp: a list that returns frees its place
// for the next bucket at once, and a bucket given up while it waits for
// a place returns without listing.
func TestListInTurnReleasesAndGivesUp(t *testing.T) {
	lim := bucketLimits{syncs: make(chan struct{}, 1), hold: time.Hour}
	for i := range 3 {
		if ran, synced := listInTurn(context.Background(), lim, func() bool { return true }); !ran || !synced {
			t.Fatalf("list %d in turn: ran %t, synced %t; want both", i, ran, synced)
		}
	}
	lim.syncs <- struct{}{} // the one place taken by a bucket still listing
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	listed := false
	if ran, _ := listInTurn(ctx, lim, func() bool { listed = true; return true }); ran || listed {
		t.Errorf("a bucket given up while waiting for a place listed (ran %t, list called %t)", ran, listed)
	}
}

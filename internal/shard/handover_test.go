package shard_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/example/myoperator/internal/shard"
	"github.com/example/myoperator/test/framework/testenv"
)

// serving records which replica serves each bucket, as Serve is called
// and returns, and every moment two served one bucket at once: a Serve
// starting on a bucket another still serves, or a write (a reconcile inside
// Served.Hold that outlasts a takeover) for a bucket another serves.
type serving struct {
	mu      sync.Mutex
	by      [shard.Buckets]*call
	overlap []string
	calls   []*call
}

// call is one Serve call.
type call struct {
	id     string
	served *shard.Served
	ended  bool
}

// serves says whether c serves b now.
func (c *call) serves(b int) bool {
	return c != nil && !c.ended && slices.Contains(c.served.Buckets(), b)
}

// writeTakes is how long each of the fake reconciles writes: longer than a
// Renew, so that a new owner would start within it were Drop or Serve's
// return not to wait for it.
const writeTakes = 300 * time.Millisecond

func (s *serving) serve(id string) func(context.Context, *shard.Served) error {
	return func(ctx context.Context, served *shard.Served) error {
		c := &call{id: id, served: served}
		s.mu.Lock()
		for _, b := range served.Started() {
			if prev := s.by[b]; prev.serves(b) {
				s.overlap = append(s.overlap, fmt.Sprintf("bucket %d: %s starts while %s serves it", b, id, prev.id))
			}
			s.by[b] = c
		}
		s.calls = append(s.calls, c)
		s.mu.Unlock()
		// Reconciles, one after another until ctx ends, each writing
		// for every bucket served when it began.
		for ctx.Err() == nil {
			release := served.Hold()
			bs := served.Buckets()
			time.Sleep(writeTakes)
			s.mu.Lock()
			for _, b := range bs {
				if s.by[b] != c {
					s.overlap = append(s.overlap, fmt.Sprintf("bucket %d: %s writes while %s serves it", b, id, s.by[b].id))
				}
			}
			s.mu.Unlock()
			release()
		}
		s.mu.Lock()
		c.ended = true
		s.mu.Unlock()
		return nil
	}
}

// holders is who serves each bucket now.
func (s *serving) holders() [shard.Buckets]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [shard.Buckets]string
	for b, c := range s.by {
		if c.serves(b) {
			out[b] = c.id
		}
	}
	return out
}

// current is the call serving each bucket now (nil: none).
func (s *serving) current() [shard.Buckets]*call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [shard.Buckets]*call
	for b, c := range s.by {
		if c.serves(b) {
			out[b] = c
		}
	}
	return out
}

// checkRelisted fails t for each bucket served by one replica before and
// after a change, but by a new Serve call, when the call that served it
// did not end for the rule that ends one: it would hold dropped buckets
// more than a quarter of those it serves.
func checkRelisted(t *testing.T, what string, before, after [shard.Buckets]*call) {
	t.Helper()
	for b := range before {
		prev, now := before[b], after[b]
		if prev == nil || now == nil || prev.id != now.id || prev == now {
			continue
		}
		left := len(prev.served.Buckets())
		if (len(prev.served.Started())-left)*4 <= left {
			t.Errorf("%s: %s listed bucket %d again; its call started with %v and ended serving %v, no more than a quarter dropped",
				what, now.id, b, prev.served.Started(), prev.served.Buckets())
		}
	}
}

// callsSince is the Serve calls made since the first n.
func (s *serving) callsSince(n int) []*call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls[n:])
}

// count is how many Serve calls were made.
func (s *serving) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

// shares is how many buckets each replica serves, and "" how many none.
func (s *serving) shares() map[string]int {
	n := map[string]int{}
	for _, id := range s.holders() {
		n[id]++
	}
	return n
}

// waitShares waits until members, and no one else, serve every bucket,
// each 64/len(members) rounded down or up.
func waitShares(t *testing.T, s *serving, members ...string) {
	t.Helper()
	lo, hi := shard.Buckets/len(members), (shard.Buckets+len(members)-1)/len(members)
	testenv.Eventually(t, 30*time.Second, func() string {
		got := s.shares()
		if len(got) != len(members) {
			return fmt.Sprintf("serving %v, want %v alone, none unserved", got, members)
		}
		for _, m := range members {
			if got[m] < lo || got[m] > hi {
				return fmt.Sprintf("serving %v, want %d to %d buckets each for %v", got, lo, hi, members)
			}
		}
		return ""
	})
}

// TestCoordinatorHandsOver: replicas join, stop and crash, and at every
// moment each bucket is served by at most one replica (Serve of the new
// owner never starts before Serve of the old one returned); every bucket
// is served once the replicas agree, in shares that differ by at most one.
// A crashed replica (its Leases left behind) loses its buckets only once
// its member Lease is stale.
func TestCoordinatorHandsOver(t *testing.T) {
	ctx, _, c := membersEnv(t)
	s := &serving{}
	type replica struct {
		stop context.CancelFunc
		done chan error
	}
	start := func(id string, crash bool) replica {
		rctx, stop := context.WithCancel(ctx)
		co := &shard.Coordinator{Client: c, Namespace: membersNS, Identity: id, Duration: 2 * time.Second, Renew: 200 * time.Millisecond,
			Serve: s.serve(id), Log: logr.Discard(), KeepOnStop: crash}
		done := make(chan error, 1)
		go func() { done <- co.Start(rctx) }()
		return replica{stop, done}
	}
	a := start("replica-a", false)
	waitShares(t, s, "replica-a")
	b := start("replica-b", false)
	waitShares(t, s, "replica-a", "replica-b")
	crashing := start("replica-c", true)
	waitShares(t, s, "replica-a", "replica-b", "replica-c")
	_ = start("replica-d", false)
	waitShares(t, s, "replica-a", "replica-b", "replica-c", "replica-d")

	// A replica leaving lists again none of the buckets the others keep,
	// but those of a call that would hold dropped buckets more than a
	// quarter of those it serves.
	survivors := []string{"replica-b", "replica-c", "replica-d"}
	before := s.current()

	// A graceful stop: its buckets move at once.
	stopped := time.Now()
	a.stop()
	if err := <-a.done; err != nil {
		t.Fatal(err)
	}
	waitShares(t, s, survivors...)
	t.Logf("replica-a stopped: its buckets served by the others after %.1f s", time.Since(stopped).Seconds())
	checkRelisted(t, "replica-a leaving", before, s.current())
	survivors = []string{"replica-b", "replica-d"}
	before, calls := s.current(), s.count()

	// A crash: the Leases stay; the others wait out the member Lease.
	crashed := time.Now()
	crashing.stop()
	if err := <-crashing.done; err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if got := s.shares()["replica-c"]; got != 0 {
		t.Fatalf("replica-c's Serve still runs after its stop")
	}
	if got := s.shares()[""]; got < 21 {
		t.Errorf("1 s after the crash %d buckets are unserved, want replica-c's 21 or 22 (its member Lease counts for 2 s)", got)
	}
	waitShares(t, s, survivors...)
	t.Logf("replica-c crashed: its buckets served by the others after %.1f s", time.Since(crashed).Seconds())
	checkRelisted(t, "replica-c crashing", before, s.current())
	// Each survivor takes the crashed replica's buckets it is given in
	// one Serve call: one list for all of them.
	after := s.current()
	for _, id := range survivors {
		took := map[*call][]int{}
		for b := range after {
			if before[b] != nil && before[b].id == "replica-c" && after[b].id == id {
				took[after[b]] = append(took[after[b]], b)
			}
		}
		if len(took) != 1 {
			t.Errorf("%s took replica-c's buckets in %d Serve calls, want 1: %v", id, len(took), took)
		}
	}
	t.Logf("%d Serve calls after the crash", len(s.callsSince(calls)))
	b.stop()
	if err := <-b.done; err != nil {
		t.Fatal(err)
	}
	waitShares(t, s, "replica-d")

	t.Logf("%d Serve calls", s.count())
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.overlap {
		t.Error(o)
	}
}

// TestCoordinatorLooksBetweenRenewals: with a renewal period far longer
// than the test, a joining replica still gets its share, because the
// replicas read the member Leases every second (the first sees the second
// and releases half its buckets) and the joiner, not yet serving its
// share, looks at the buckets every second until it takes them. Looking
// only at each renewal, the joiner would wait a minute.
func TestCoordinatorLooksBetweenRenewals(t *testing.T) {
	ctx, cancel, c := membersEnv(t)
	s := &serving{}
	start := func(id string) {
		co := &shard.Coordinator{Client: c, Namespace: membersNS, Identity: id, Duration: 3 * time.Minute, Renew: time.Minute,
			Serve: s.serve(id), Log: logr.Discard()}
		done := make(chan error, 1)
		go func() { done <- co.Start(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
	}
	start("replica-a")
	waitShares(t, s, "replica-a")
	joined := time.Now()
	start("replica-b")
	waitShares(t, s, "replica-a", "replica-b")
	t.Logf("replica-b served its share %.1f s after it started", time.Since(joined).Seconds())
}

// TestBucketOfIsTheServersHash: BucketOf puts a UID in the bucket whose
// shard selector matches it.
func TestBucketOfIsTheServersHash(t *testing.T) {
	for i := range 2000 {
		uid := types.UID(fmt.Sprintf("0b6f%04d-1c2d-4e5f-8a9b-%012d", i, i*7919))
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: uid}}
		b := shard.BucketOf(uid)
		for _, try := range []int{b, (b + 1) % shard.Buckets} {
			in, err := shard.NewMatcher([]int{try}).Matches(obj)
			if err != nil {
				t.Fatal(err)
			}
			if in != (try == b) {
				t.Fatalf("UID %s: BucketOf %d, the selector of bucket %d matches: %v", uid, b, try, in)
			}
		}
	}
}

func TestParseBucket(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"0", 0, true}, {"63", 63, true}, {"17", 17, true},
		{"64", 0, false}, {"-1", 0, false}, {"07", 0, false}, {"", 0, false}, {"x", 0, false}, {" 1", 0, false},
	} {
		got, ok := shard.ParseBucket(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseBucket(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
		if ok && shard.BucketValue(got) != tt.in {
			t.Errorf("BucketValue(%d) = %q, want %q", got, shard.BucketValue(got), tt.in)
		}
	}
	if got := shard.BucketLeaseName(7); got != "myoperator-bucket-07" {
		t.Errorf("BucketLeaseName(7) = %q", got)
	}
}

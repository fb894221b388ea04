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
// and returns, and every moment two served one bucket at once.
type serving struct {
	mu      sync.Mutex
	by      [shard.Buckets]string
	overlap []string
	starts  int
	// ended counts each replica's Serve calls that returned.
	ended map[string]int
}

func (s *serving) serve(id string) func(context.Context, int) error {
	return func(ctx context.Context, b int) error {
		s.mu.Lock()
		s.starts++
		if s.by[b] != "" {
			s.overlap = append(s.overlap, fmt.Sprintf("bucket %d: %s starts while %s serves it", b, id, s.by[b]))
		}
		s.by[b] = id
		s.mu.Unlock()
		<-ctx.Done()
		// A write in flight as the context ends is still this replica's:
		// Serve returns only after it.
		time.Sleep(50 * time.Millisecond)
		s.mu.Lock()
		if s.ended == nil {
			s.ended = map[string]int{}
		}
		s.ended[id]++
		if s.by[b] == id {
			s.by[b] = ""
		}
		s.mu.Unlock()
		return nil
	}
}

// holders is who serves each bucket now.
func (s *serving) holders() [shard.Buckets]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.by
}

// movedFrom counts the buckets one of ids served in before and another
// serves in after.
func movedFrom(before, after [shard.Buckets]string, ids []string) int {
	n := 0
	for b := range before {
		if slices.Contains(ids, before[b]) && after[b] != before[b] {
			n++
		}
	}
	return n
}

// endedOf is how many Serve calls of ids returned.
func (s *serving) endedOf(ids ...string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, id := range ids {
		n += s.ended[id]
	}
	return n
}

// shares is how many buckets each replica serves, and "" how many none.
func (s *serving) shares() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := map[string]int{}
	for _, id := range s.by {
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
	_, _, c := testenv.Start(t, testenv.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: membersNS}}); err != nil {
		t.Fatal(err)
	}
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

	// A replica leaving ends only the Serve of the buckets that move:
	// its own, and the few the new assignment moves between the others.
	survivors := []string{"replica-b", "replica-c", "replica-d"}
	held, endedBefore := s.holders(), s.endedOf(survivors...)

	// A graceful stop: its buckets move at once.
	stopped := time.Now()
	a.stop()
	if err := <-a.done; err != nil {
		t.Fatal(err)
	}
	waitShares(t, s, "replica-b", "replica-c", "replica-d")
	t.Logf("replica-a stopped: its buckets served by the others after %.1f s", time.Since(stopped).Seconds())
	if got, want := s.endedOf(survivors...)-endedBefore, movedFrom(held, s.holders(), survivors); got != want {
		t.Errorf("replica-a leaving ended %d of the others' Serve calls, want %d: the buckets that moved between them", got, want)
	}
	survivors = []string{"replica-b", "replica-d"}
	held, endedBefore = s.holders(), s.endedOf(survivors...)

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
	waitShares(t, s, "replica-b", "replica-d")
	t.Logf("replica-c crashed: its buckets served by the others after %.1f s", time.Since(crashed).Seconds())
	if got, want := s.endedOf(survivors...)-endedBefore, movedFrom(held, s.holders(), survivors); got != want {
		t.Errorf("replica-c crashing ended %d of the others' Serve calls, want %d: the buckets that moved between them", got, want)
	}
	b.stop()
	if err := <-b.done; err != nil {
		t.Fatal(err)
	}
	waitShares(t, s, "replica-d")

	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.overlap {
		t.Error(o)
	}
	t.Logf("%d Serve calls", s.starts)
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

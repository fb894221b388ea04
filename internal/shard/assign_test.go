package shard

import (
	"fmt"
	"hash/fnv"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// replicas names n pods as a Deployment's replicas are named.
func replicas(n int) []string {
	out := make([]string, n)
	for i := range n {
		out[i] = fmt.Sprintf("myoperator-controller-manager-7d9f8c6b5-%05x", i*7919)
	}
	return out
}

// owners maps each bucket to its member.
func owners(t *testing.T, a Assignment) map[int]string {
	t.Helper()
	out := map[int]string{}
	for m, bs := range a {
		for _, b := range bs {
			if prev, ok := out[b]; ok {
				t.Fatalf("bucket %d assigned to %s and %s", b, prev, m)
			}
			out[b] = m
		}
	}
	return out
}

// TestAssign: every bucket has exactly one member, shares differ by at
// most one bucket, the order of the members does not matter, and a member
// joining or leaving moves the share it takes or leaves and at most 4 more
// buckets with up to 4 members, 8 more with up to 16 (rendezvous hashing
// moves the share alone; the extra is the price of even shares).
func TestAssign(t *testing.T) {
	for n := 1; n <= 16; n++ {
		extra := 8
		if n+1 <= 4 {
			extra = 4
		}
		t.Run(fmt.Sprintf("%d members", n), func(t *testing.T) {
			ms := replicas(n)
			a := Assign(ms)
			if got := len(owners(t, a)); got != Buckets {
				t.Fatalf("%d buckets assigned, want %d", got, Buckets)
			}
			var sizes []int
			for _, m := range ms {
				sizes = append(sizes, len(a[m]))
			}
			if slices.Max(sizes)-slices.Min(sizes) > 1 {
				t.Errorf("shares %v differ by more than one bucket", sizes)
			}
			reversed := slices.Clone(ms)
			slices.Reverse(reversed)
			if b := Assign(append(reversed, ms[0], "")); !equal(a, b) {
				t.Errorf("the members' order, a duplicate or an empty name changed the assignment")
			}
			before := owners(t, a)
			joined := owners(t, Assign(replicas(n+1)))
			share := (Buckets + n) / (n + 1) // the joining member's, rounded up
			if moved := changed(before, joined); moved > share+extra {
				t.Errorf("member %d joining moved %d buckets, its share is %d", n+1, moved, share)
			}
			if n > 1 {
				left := owners(t, Assign(ms[1:]))
				share := len(a[ms[0]])
				if moved := changed(before, left); moved > share+extra {
					t.Errorf("member 1 leaving moved %d buckets, its share was %d", moved, share)
				}
			}
		})
	}
	if a := Assign(nil); a != nil {
		t.Errorf("Assign(nil) = %v, want nil", a)
	}
}

func equal(a, b Assignment) bool {
	if len(a) != len(b) {
		return false
	}
	for m, bs := range a {
		if !slices.Equal(bs, b[m]) {
			return false
		}
	}
	return true
}

func changed(a, b map[int]string) int {
	n := 0
	for bucket, m := range a {
		if b[bucket] != m {
			n++
		}
	}
	return n
}

func TestRanges(t *testing.T) {
	for _, tc := range []struct {
		name    string
		buckets []int
		want    string
	}{
		{"none", nil, ""},
		{"the first", []int{0}, "shardRange(object.metadata.uid, '0x0000000000000000', '0x0400000000000000')"},
		{"the last ends at 2^64", []int{63}, "shardRange(object.metadata.uid, '0xfc00000000000000', '0x10000000000000000')"},
		{"all, merged into one", upTo(64), "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"},
		{"runs merged, unordered and duplicated input", []int{5, 1, 2, 2, 6, 40},
			"shardRange(object.metadata.uid, '0x0400000000000000', '0x0c00000000000000') || " +
				"shardRange(object.metadata.uid, '0x1400000000000000', '0x1c00000000000000') || " +
				"shardRange(object.metadata.uid, '0xa000000000000000', '0xa400000000000000')"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Selector(tc.buckets); got != tc.want {
				t.Errorf("Selector(%v) =\n  %s\nwant\n  %s", tc.buckets, got, tc.want)
			}
		})
	}
}

// upTo returns 0, 1, ..., n-1: the bucket numbers of the first n buckets.
func upTo(n int) []int {
	var out []int
	for i := 0; i < n; i++ {
		out = append(out, i)
	}
	return out
}

// TestMatcher: an object matches exactly the member whose bucket holds
// the FNV-1a hash of its UID, computed here with the standard library
// rather than apimachinery's helper the matcher uses.
func TestMatcher(t *testing.T) {
	a := Assign(replicas(3))
	matchers := map[string]Matcher{}
	for m, bs := range a {
		matchers[m] = NewMatcher(bs)
	}
	for range 2000 {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: uuid.NewUUID()}}
		want := owners(t, a)[bucketOf(obj.UID)]
		for m, mt := range matchers {
			got, err := mt.Matches(obj)
			if err != nil {
				t.Fatal(err)
			}
			if got != (m == want) {
				t.Fatalf("UID %s (bucket %d): %s matches %v, want %v", obj.UID, bucketOf(obj.UID), m, got, m == want)
			}
		}
	}
	if ok, err := NewMatcher(nil).Matches(&corev1.ConfigMap{}); ok || err != nil {
		t.Errorf("the matcher of no bucket matched: %v, %v", ok, err)
	}
}

func bucketOf(uid types.UID) int {
	h := fnv.New64a()
	_, _ = h.Write([]byte(uid))
	return int(h.Sum64() >> bucketShift)
}

package shard

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/sharding"
)

const (
	// Buckets is how many equal ranges the hash space is cut into: enough
	// that 4 replicas' shares differ by at most 1/64 of the Drinks, few
	// enough that a selector stays a short query parameter (at most 32
	// ranges, when every other bucket is a member's).
	Buckets = 64
	// bucketShift turns a bucket into the first hash of its range.
	bucketShift = 64 - 6
	// Key is the field whose hash the ranges cut: a Drink's UID, fixed for
	// its life, unlike its namespace, which would put a namespace's Drinks
	// on one replica.
	Key = "object.metadata.uid"
)

// Assignment maps each member to the buckets it serves, in order.
type Assignment map[string][]int

// Assign gives each of the Buckets to one of members (duplicates and the
// empty name ignored); nil when there is none. The result depends only on
// the set of members, not on their order.
func Assign(members []string) Assignment {
	ms := slices.Clone(members)
	ms = slices.DeleteFunc(ms, func(m string) bool { return m == "" })
	slices.Sort(ms)
	ms = slices.Compact(ms)
	if len(ms) == 0 {
		return nil
	}
	type pair struct {
		score  uint64
		member string
		bucket int
	}
	pairs := make([]pair, 0, len(ms)*Buckets)
	for _, m := range ms {
		for b := range Buckets {
			pairs = append(pairs, pair{score(m, b), m, b})
		}
	}
	// Highest score first; ties (never seen with SHA-256, but possible)
	// broken by name and bucket, so that every replica agrees.
	slices.SortFunc(pairs, func(a, b pair) int {
		switch {
		case a.score != b.score:
			if a.score > b.score {
				return -1
			}
			return 1
		case a.member != b.member:
			return strings.Compare(a.member, b.member)
		default:
			return a.bucket - b.bucket
		}
	})
	owner := make([]string, Buckets)
	out := Assignment{}
	for _, m := range ms {
		out[m] = nil
	}
	// Every member first takes up to its floor share; the buckets left
	// (Buckets mod members of them) then go one each to the members that
	// score them highest. So shares differ by at most one bucket.
	fill := func(limit int) {
		for _, p := range pairs {
			if owner[p.bucket] != "" || len(out[p.member]) == limit {
				continue
			}
			owner[p.bucket] = p.member
			out[p.member] = append(out[p.member], p.bucket)
		}
	}
	fill(Buckets / len(ms))
	fill((Buckets + len(ms) - 1) / len(ms))
	for m := range out {
		slices.Sort(out[m])
	}
	return out
}

// score is the rendezvous weight of member for bucket: SHA-256, whose
// bits are independent across members and buckets (FNV-1a's are not, for
// names that differ in their last characters).
func score(member string, bucket int) uint64 {
	sum := sha256.Sum256([]byte(member + "\x00" + strconv.Itoa(bucket)))
	return binary.BigEndian.Uint64(sum[:8])
}

// Ranges are buckets merged into the hash ranges they cover, in the
// notation of the shard selector: 0x-prefixed, 16 hex digits, the end
// exclusive (2^64 written with 17 digits).
func Ranges(buckets []int) []sharding.ShardRangeRequirement {
	bs := slices.Clone(buckets)
	slices.Sort(bs)
	bs = slices.Compact(bs)
	var out []sharding.ShardRangeRequirement
	for i := 0; i < len(bs); {
		j := i
		for j+1 < len(bs) && bs[j+1] == bs[j]+1 {
			j++
		}
		out = append(out, sharding.ShardRangeRequirement{Key: Key, Start: bound(bs[i]), End: bound(bs[j] + 1)})
		i = j + 1
	}
	return out
}

// bound is the first hash of bucket b (of the space's end for Buckets).
func bound(b int) string {
	if b >= Buckets {
		return "0x10000000000000000"
	}
	return fmt.Sprintf("0x%016x", uint64(b)<<bucketShift)
}

// Selector is the shard selector of buckets for a list or watch (its
// ListOptions.ShardSelector). It is "" for no bucket, which the API server
// reads as no selector at all: a member without a bucket (only possible
// with more members than Buckets) must not list.
func Selector(buckets []int) string {
	return sharding.NewSelector(Ranges(buckets)...).String()
}

// Matcher checks on the client what Selector asks of the server.
type Matcher struct {
	sel sharding.Selector
}

// NewMatcher matches the objects whose UID hashes into buckets; with no
// bucket, none.
func NewMatcher(buckets []int) Matcher {
	if len(buckets) == 0 {
		return Matcher{}
	}
	return Matcher{sel: sharding.NewSelector(Ranges(buckets)...)}
}

// Matches says whether obj's UID hashes into the matcher's buckets.
func (m Matcher) Matches(obj runtime.Object) (bool, error) {
	if m.sel == nil {
		return false, nil
	}
	return m.sel.Matches(obj)
}

package shard

import (
	"fmt"
	"hash/fnv"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
)

const (
	// BucketLabel carries a bucket number (0 to Buckets-1): on a bucket's
	// Lease, and on the ConfigMap of a Drink in that bucket, which is how
	// a replica selects the ConfigMaps of its buckets (a ConfigMap's own
	// UID hashes elsewhere).
	BucketLabel = "example.com/shard-bucket"
	// bucketLeasePrefix starts a bucket Lease's name; two digits end it.
	bucketLeasePrefix = "myoperator-bucket-"
)

// BucketOf is the bucket of the object with uid: the top bits of the
// 64-bit FNV-1a hash of the UID, the hash the API server's shardRange
// compares (apimachinery's sharding.HashField).
func BucketOf(uid types.UID) int {
	h := fnv.New64a()
	_, _ = h.Write([]byte(uid))
	return int(h.Sum64() >> bucketShift)
}

// BucketValue is b as BucketLabel's value.
func BucketValue(b int) string { return strconv.Itoa(b) }

// ParseBucket reads BucketLabel's value; ok is false for anything but a
// bucket number.
func ParseBucket(v string) (b int, ok bool) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n >= Buckets || strconv.Itoa(n) != v {
		return 0, false
	}
	return n, true
}

// BucketLeaseName names bucket b's Lease, whose holder is the one replica
// that may write the Drinks of b and their ConfigMaps.
func BucketLeaseName(b int) string { return fmt.Sprintf("%s%02d", bucketLeasePrefix, b) }

package shard

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// The bucket cache's steps, for the tests of package shard_test: those
// start their API server through test/framework/testenv, which an
// in-package test cannot import (testenv imports internal/app, which
// imports this package).
var (
	FillBucketCache   = fillBucketCache
	WithShardSelector = withShardSelector
)

// UIDIn is a UID that hashes into bucket b, or "" if none of the first
// 100,000 tried does (each does with odds 1/Buckets).
func UIDIn(b int) types.UID {
	for i := range 100000 {
		if uid := types.UID(fmt.Sprintf("uid-%d", i)); BucketOf(uid) == b {
			return uid
		}
	}
	return ""
}

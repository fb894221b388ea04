package shard

// The bucket cache's steps, for the tests of package shard_test: those
// start their API server through test/framework/testenv, which an
// in-package test cannot import (testenv imports internal/app, which
// imports this package).
var (
	FillBucketCache   = fillBucketCache
	WithShardSelector = withShardSelector
)

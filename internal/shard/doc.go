// Package shard splits the Drinks among active replicas by the 64-bit
// FNV-1a hash of their UIDs, the hash the API server's sharded list and
// watch (the ShardedListAndWatch feature gate) selects with.
//
// The hash space is cut into Buckets equal ranges, and Assign gives each
// bucket to one member: every member ranks the buckets by a rendezvous
// score of (member, bucket), and the highest scores are served first, each
// member up to its fair share. So every replica computes the same
// assignment from the same member list, shares differ by at most one
// bucket, and a member joining or leaving moves the share it takes or
// leaves and a few buckets more (at most 4 of the 64 with up to 4
// members, 8 with up to 16, TestAssign). Rendezvous hashing alone moves
// the share only, but its shares are binomial: with 4 members and 64
// buckets one share's standard deviation is 22% of it, where the heap of
// the busiest replica is what sharding is for.
//
// Members finds the members: each replica keeps a Lease of its own
// (LeaseName) renewed and reads the others'; one that stops deletes its
// Lease, and one not renewed for the members' Duration is dropped.
//
// Coordinator hands the buckets over: each bucket has a Lease
// (BucketLeaseName) whose holder alone serves it; a replica gives a bucket
// up by stopping its writes and then clearing the holder, and takes one
// that is free or whose holder is no longer a member. Fence is the
// admission webhook that makes the API server refuse a replica's write to
// a Drink, or to its ConfigMap, of a bucket it does not hold: a replica
// replaced while paused writes nothing when it resumes.
//
// A member's buckets become a shard selector (Selector) for its Drink
// informer, and the same ranges as apimachinery's sharding.Selector
// (NewMatcher) for checking on the client what the server sent: an API server
// without the feature gate ignores the selector and sends everything. The
// Drinks' ConfigMaps carry their Drink's bucket in BucketLabel, by which a
// replica selects them.
//
// Setup is the one call the manager makes to share the Drinks: it adds the
// Coordinator, and for the buckets taken at each handover it starts one
// cache of them (one pass over the API server's cache for all of them;
// listed in turn with the replica's other caches: listInTurn) and the
// Drink controller over it, which it gets from the reconciler through
// Reconciler, the one hook the reconciler implements. A bucket given up
// later is dropped from its controller (Served) rather than listing the
// others again. The runtime lives here rather than in the manager's
// assembly so that the caches, the list turns and the handovers are
// changed, and tested, in one place; the reconciler is an interface
// because its package imports this one.
package shard

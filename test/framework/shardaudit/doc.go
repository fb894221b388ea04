// Package shardaudit reads and replays an API server's audit log to check the
// handovers of replicas that share the Drinks (internal/shard): it follows
// the holder of every bucket through the writes to the bucket's Lease, and
// finds each admitted write to a Drink's status or ConfigMap that came from
// a pod that did not hold the Drink's bucket when the request arrived.
// internal/app's TestShardedReplicas and the e2e feature "replicas share
// the Drinks" read their API server's log with it.
package shardaudit

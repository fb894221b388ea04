// Package readbytes counts, at the HTTP transport of the manager's API
// client, the bytes the API server sends in answer to reads (gets, lists
// and watches), by resource: what sharing the Drinks is for, since a
// replica that watches only its share through the API server's shard
// selector receives a fraction of the Drinks' bytes, and one that filters
// on the client receives them all (docs/sharding.md).
package readbytes

// Package freshread shares reads from the API server among callers that
// each need a read begun after they asked, and bounds how often they are
// made.
//
// The operator's webhooks read some objects live while the API server
// waits on them (the shard fence reads Leases, the Drink defaulting reads
// the OperatorConfig): a read from before the request could miss the
// change it must see. But anyone who reaches the webhook port can send
// reviews, so a read per review would let a flood of forged reviews drive
// the operator's requests to the API server. A Group answers every caller
// that asked while a read was queued with that one read, runs at most one
// read of a key at a time (or, Overlapping, begins one at most every so
// often), and makes at most Rate reads a second over all keys.
package freshread

// Package modelcheck runs random sequences of user actions (test/model's
// generator) against a real API server with the webhooks and the operator's
// manager in this process, and after every step checks that the cluster
// matches test/model: `make test` runs a fixed seed, `make fuzz-e2e
// SEED=... STEPS=...` a longer run. A failure prints the seed, the sequence
// and the shortest failing sequence found by shrinking it.
package modelcheck

// Package faults runs the manager binary behind a fault-injecting proxy of
// the API server (issue 14, items 1 and 2): TestCrashAtEveryWrite SIGKILLs
// it right after each of its writes in turn and starts a fresh one, and
// TestStaleAndDroppedEvents delays or coalesces its watch events, or
// restarts it with informers that start from an older snapshot. Both
// require the final state to equal the fault-free run's.
//
// The full write-point table is behind CRASH_POINTS=all:
//
//	CRASH_POINTS=all go test -count=1 -timeout=3h -v ./test/faults/ -run TestCrashAtEveryWrite
//
// Without it the test runs a sample of the write points.
package faults

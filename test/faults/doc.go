// Package faults runs the manager binary behind a fault-injecting proxy of
// the API server: TestCrashAtEveryWrite SIGKILLs
// it right after each of its writes in turn and starts a fresh one, and
// TestStaleAndDroppedEvents delays or coalesces its watch events, or
// restarts it with informers that start from lists recorded steps earlier.
// Both require the final state to equal the fault-free run's.
//
// The full write-point table (about 80 trials, 15 minutes) is behind
// CRASH_POINTS=all; CRASH_POINTS=3,17 runs chosen points, and
// CRASH_POINTS=match:TEXT the writes whose identity (verb, path,
// occurrence) contains TEXT; by default a
// sample of CRASH_SAMPLE (8) points spread from the first write to the
// last runs, with the first write of every kind (verb, resource,
// subresource) the spread misses. A planned kill whose write a trial does
// not make moves to the next write of its kind; one that fires nowhere
// fails the point:
//
//	CRASH_POINTS=all go test -count=1 -timeout=60m -v ./test/faults/ -run TestCrashAtEveryWrite
//
// FAULTS_MANAGER=<binary> runs another build of the manager, such as one
// with a bug planted, to see the tests fail.
package faults

// Package memlimit sets the Go runtime's soft memory limit from the
// container's memory limit, which the Deployment passes in through the
// downward API.
//
// Without it the garbage collector paces by GOGC alone: the heap may grow
// to twice what is live before a collection, so a manager whose live heap
// is half its container limit is OOM-killed at the next peak although it
// never needed more. With a soft limit below the container's, the
// collector works harder as the heap nears it instead.
package memlimit

package faults

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCrashAtEveryWrite (issue 14, item 1): the scenario runs fault-free
// once to count the manager's writes (every one: operands, status, events,
// the Lease, certificates); then, for each crash point k, the scenario runs
// again in fresh names, the manager is SIGKILLed right after write k
// landed (before it hears the answer), a fresh manager starts, and the
// final state must equal the fault-free one. CRASH_POINTS=all runs every k;
// CRASH_POINTS=3,17 runs those; by default a spread sample of
// CRASH_SAMPLE (8) points runs, the first and the last included.
func TestCrashAtEveryWrite(t *testing.T) {
	h := newHarness(t)
	// The first start in a cluster writes what later ones find in place
	// (the Lease object, for one); a warm-up makes the baseline's writes
	// the ones every trial repeats.
	warm := h.trial(0, fault{}, nil)
	if warm.diff != "" {
		t.Fatalf("warm-up run: %s", warm.diff)
	}
	base := h.trial(1, fault{}, nil)
	if base.diff != "" {
		t.Fatalf("fault-free run: %s", base.diff)
	}
	n := len(base.writes)
	t.Logf("fault-free run: %d writes (warm-up: %d) in %s; final state of %d objects:\n  %s", n, len(warm.writes),
		base.took.Round(time.Millisecond), len(base.snapshot), strings.Join(base.snapshot, "\n  "))
	var list strings.Builder
	for _, w := range base.writes {
		fmt.Fprintf(&list, "\n  %3d %s", w.Index, w)
	}
	t.Logf("fault-free writes (k, verb, path, code):%s", list.String())

	points := crashPoints(t, n)
	t.Logf("crash points (%d of %d): %v", len(points), n, points)
	var table strings.Builder
	failed := 0
	start := time.Now()
	for i, k := range points {
		r := h.trial(i+2, fault{killAfter: k}, base.snapshot)
		w := "(none)"
		if k <= len(r.writes) {
			w = r.writes[k-1].String()
		}
		outcome := "ok"
		switch {
		case !r.killed:
			outcome = fmt.Sprintf("not killed: only %d writes", len(r.writes))
		case r.diff != "":
			outcome = "final state differs:\n      " + strings.ReplaceAll(r.diff, "\n", "\n      ")
		}
		if outcome != "ok" {
			failed++
			t.Errorf("crash after write %d (%s): %s", k, w, outcome)
		}
		fmt.Fprintf(&table, "\n  %3d  %-60s %-4s %s", k, w, strings.SplitN(outcome, ":", 2)[0], r.took.Round(100*time.Millisecond))
	}
	t.Logf("crash table (k, the write in that trial, outcome, trial time):%s", table.String())
	t.Logf("%d crash points, %d failed, in %s (%s a trial)", len(points), failed, time.Since(start).Round(time.Second),
		(time.Since(start) / time.Duration(max(1, len(points)))).Round(100*time.Millisecond))
}

// crashPoints chooses the write points from CRASH_POINTS and CRASH_SAMPLE.
func crashPoints(t *testing.T, n int) []int {
	t.Helper()
	spec := envOr("CRASH_POINTS", "")
	var points []int
	switch {
	case spec == "all":
		for k := 1; k <= n; k++ {
			points = append(points, k)
		}
	case spec != "":
		for _, f := range strings.Split(spec, ",") {
			k, err := strconv.Atoi(f)
			if err != nil || k < 1 {
				t.Fatalf("CRASH_POINTS: %q", f)
			}
			points = append(points, k)
		}
	default:
		sample, err := strconv.Atoi(envOr("CRASH_SAMPLE", "8"))
		if err != nil || sample < 2 {
			t.Fatalf("CRASH_SAMPLE: %q", envOr("CRASH_SAMPLE", ""))
		}
		// Spread evenly, from the first write to the last.
		for i := range sample {
			k := 1 + i*(n-1)/(sample-1)
			if len(points) == 0 || points[len(points)-1] != k {
				points = append(points, k)
			}
		}
	}
	return points
}

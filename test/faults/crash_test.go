package faults

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCrashAtEveryWrite: the scenario runs fault-free
// once to count the manager's writes (every one: operands, status, events,
// the Lease, certificates); then, for each crash point k, the scenario runs
// again in fresh names, the manager is SIGKILLed right after the write that
// is the fault-free run's write k (the same verb and path, and its same
// occurrence, since timing shifts the order a little) landed, before it
// hears the answer; a fresh manager starts, and the final state must equal
// the fault-free one. CRASH_POINTS=all runs every k;
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
	baseIDs := newWriteIDs(1)
	var ids []string
	for _, w := range base.writes {
		ids = append(ids, baseIDs.next(w))
		fmt.Fprintf(&list, "\n  %3d %s -> %d", w.Index, ids[len(ids)-1], w.Code)
	}
	t.Logf("fault-free writes (k, verb, path, code):%s", list.String())

	points := crashPoints(t, ids)
	t.Logf("crash points (%d of %d): %v", len(points), n, points)
	var table strings.Builder
	failed, unkilled := 0, 0
	start := time.Now()
	for i, k := range points {
		r := h.trial(i+2, fault{killAfter: ids[k-1]}, base.snapshot)
		// The write as it went in this trial: its place and answer.
		w := ids[k-1] + " (none in this trial)"
		trialIDs := newWriteIDs(i + 2)
		for _, tw := range r.writes {
			if trialIDs.next(tw) == ids[k-1] {
				w = fmt.Sprintf("%s -> %d, write %d", ids[k-1], tw.Code, tw.Index)
				break
			}
		}
		outcome := "ok"
		switch {
		case r.diff != "":
			outcome = "final state differs:\n      " + strings.ReplaceAll(r.diff, "\n", "\n      ")
			failed++
			t.Errorf("crash after write %d (%s): %s", k, w, outcome)
		case !r.killed:
			// The Lease renewals come with the clock, and conflicts with
			// the cache's timing, so a trial may not repeat every write
			// of the fault-free run.
			outcome = fmt.Sprintf("no crash: no such write among its %d", len(r.writes))
			unkilled++
		}
		fmt.Fprintf(&table, "\n  %3d  %-75s %-4s %s", k, w, strings.SplitN(outcome, ":", 2)[0], r.took.Round(100*time.Millisecond))
	}
	t.Logf("crash table (k, the write killed after: verb, path, occurrence, its answer and place in that trial; outcome; trial time):%s", table.String())
	t.Logf("%d crash points, %d failed, %d without a crash (too few writes), in %s (%s a trial)", len(points), failed, unkilled, time.Since(start).Round(time.Second),
		(time.Since(start) / time.Duration(max(1, len(points)))).Round(100*time.Millisecond))
}

// crashPoints chooses the write points from CRASH_POINTS and CRASH_SAMPLE;
// CRASH_POINTS=match:TEXT chooses the writes whose identity contains TEXT.
func crashPoints(t *testing.T, ids []string) []int {
	t.Helper()
	n := len(ids)
	spec := envOr("CRASH_POINTS", "")
	var points []int
	switch {
	case strings.HasPrefix(spec, "match:"):
		for k, id := range ids {
			if strings.Contains(id, strings.TrimPrefix(spec, "match:")) {
				points = append(points, k+1)
			}
		}
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

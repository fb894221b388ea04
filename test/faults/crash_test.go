package faults

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/example/myoperator/test/reliability"
)

// TestCrashAtEveryWrite: the scenario runs fault-free
// once to count the manager's writes (every one: operands, status, events,
// the Lease, certificates); then, for each crash point k, the scenario runs
// again in fresh names, the manager is SIGKILLed right after the write that
// is the fault-free run's write k (the same verb and path, and its same
// occurrence, since timing shifts the order a little) landed, before it
// hears the answer; a fresh manager starts, and the final state must equal
// the fault-free one. CRASH_POINTS=all runs every k;
// CRASH_POINTS=3,17 runs those; by default a sample runs: the first write
// of every kind (verb, resource, subresource), and CRASH_SAMPLE (2: the
// first and the last) points spread between, all among the writes both
// fault-free runs made and the API server accepted, event series' patches
// left out (see stable below). A planned write that a trial does not make moves
// the kill to the next write of its kind; a kill that fires nowhere fails
// the point.
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
	// A write the warm-up run made too is one the scenario makes every
	// time; one it did not (an event series' count patched on the event
	// recorder's clock, a 409 the cache's timing caused) may not happen in
	// a trial, so no kill can be planned on it for sure.
	warmIDs := newWriteIDs(0)
	repeated := map[string]bool{}
	for _, w := range warm.writes {
		repeated[warmIDs.next(w)] = true
	}
	// An event series' PATCH is the event recorder's, not a reconcile's:
	// it comes when an event with the same reason about the same object is
	// recorded again while the first is cached, so how many reconciles the
	// cache's timing caused decides it. Both fault-free runs can make it
	// and a trial not (CI saw PATCH events.events/default/GB #1 so), and
	// the manager keeps no state that a crash after it could break: no kill
	// is planned there unless CRASH_POINTS names it.
	// A write the API server refused (a 409 on a stale resourceVersion)
	// changed nothing, so a crash after it is a crash after the write
	// before it; whether it happens at all is the cache's timing (a run
	// saw PATCH drinks.example/NS/delta/status #2 -> 409 in both fault-free
	// runs and not in the trial).
	refused := map[string]bool{}
	for i, w := range base.writes {
		if w.Code >= 400 {
			refused[ids[i]] = true
		}
	}
	// A renewal of the leader's Lease comes on the leader elector's
	// clock, not after a reconcile: a trial that converges sooner makes
	// fewer (CI saw a trial end before PUT leases.coordination/... #14,
	// the base run's last write, after the webhooks moved to HTTP/2).
	// The first, the acquisition, is kept.
	stable := func(id string) bool {
		return repeated[id] && !eventSeries(id) && !refused[id] && !leaseRenewal(id)
	}

	points := crashPoints(t, ids, stable)
	t.Logf("crash points (%d of %d, %d write kinds): %v", len(points), n, len(writeKinds(ids, stable)), points)
	var table strings.Builder
	failed, replanned, unstable := 0, 0, 0
	start := time.Now()
	trials := 2
	for _, k := range points {
		p := runPoint(ids, k, func(id string) result {
			trials++
			return h.trial(trials, fault{killAfter: id}, base.snapshot)
		})
		// The write as it went in the trial that counted: its place and
		// answer.
		at := max(p.fired, p.planned)
		w := ids[at-1] + " (none in this trial)"
		trialIDs := newWriteIDs(trials)
		for _, tw := range p.r.writes {
			if trialIDs.next(tw) == ids[at-1] {
				w = fmt.Sprintf("%s -> %d, write %d", ids[at-1], tw.Code, tw.Index)
				break
			}
		}
		if len(p.replanned) > 0 {
			replanned++
			t.Logf("crash point %d (%s) did not fire: the trial made no such write; re-planned at the next write of its kind: %v", k, ids[k-1], p.replanned)
		}
		outcome := "ok"
		switch {
		case p.r.diff != "":
			outcome = "final state differs:\n      " + strings.ReplaceAll(p.r.diff, "\n", "\n      ")
			failed++
			t.Errorf("crash after write %d (%s): %s", at, w, outcome)
		case p.fired == 0 && !stable(ids[k-1]):
			// Chosen by CRASH_POINTS: a write the fault-free runs do not
			// both make; said, not failed.
			outcome = fmt.Sprintf("no kill, unstable: an event series' patch, a refused write or one the warm-up run did not make, nor this trial (%d writes)", len(p.r.writes))
			unstable++
		case p.fired == 0:
			// A kill that never fires tests nothing: the trial would
			// pass with the crash recovery removed.
			outcome = fmt.Sprintf("no kill: neither this write nor a later one of its kind (%s) happened in the trial (%d writes)", writeKind(ids[k-1]), len(p.r.writes))
			failed++
			t.Errorf("crash point %d (%s): %s", k, ids[k-1], outcome)
		}
		fmt.Fprintf(&table, "\n  %3d  %-75s %-8s %s", at, w, strings.SplitN(outcome, ":", 2)[0], p.r.took.Round(100*time.Millisecond))
	}
	t.Logf("crash table (k, the write killed after: verb, path, occurrence, its answer and place in that trial; outcome; trial time):%s", table.String())
	took := time.Since(start)
	perTrial := took / time.Duration(max(1, trials-2))
	t.Logf("%d crash points, %d failed, %d re-planned at a later write of their kind, %d on unstable writes without a kill, %d trials in %s (%s a trial)",
		len(points), failed, replanned, unstable, trials-2, took.Round(time.Second), perTrial.Round(100*time.Millisecond))
	reliability.Save(t, map[string]any{
		"writes": n, "writeKinds": len(writeKinds(ids, nil)), "stableWriteKinds": len(writeKinds(ids, stable)), "points": len(points),
		"failed": failed, "replanned": replanned, "unstable": unstable,
		"trials": trials - 2, "seconds": took.Round(time.Second).Seconds(), "trialSeconds": perTrial.Round(100 * time.Millisecond).Seconds(),
	}, "CRASH_POINTS", "CRASH_SAMPLE")
}

// point is what became of one planned crash point.
type point struct {
	// planned is the write the kill was planned after; fired the one it
	// fired after (0: none).
	planned, fired int
	// replanned are the later writes of the same kind the kill moved to,
	// in turn, because the one before did not happen in its trial.
	replanned []int
	// r is the last trial run for the point.
	r result
}

// runPoint runs the trial for crash point k and, while the planned write
// does not happen in a trial, re-plans the kill at the next write of the
// same kind in the fault-free run. The Lease renewals come with the clock
// and conflicts (a 409 status patch) with the cache's timing, so a trial
// may not repeat every write of the fault-free run; a trial whose kill
// never fires would pass without testing anything, so runPoint reports
// it (fired 0) for the caller to fail.
func runPoint(ids []string, k int, trial func(id string) result) point {
	p := point{planned: k}
	for {
		p.r = trial(ids[k-1])
		if p.r.killed {
			p.fired = k
			return p
		}
		if p.r.diff != "" {
			return p
		}
		next := nextOfKind(ids, k)
		if next == 0 {
			return p
		}
		p.replanned = append(p.replanned, next)
		k = next
	}
}

// nextOfKind is the first write after k (1-based) of the same kind as
// write k, or 0.
func nextOfKind(ids []string, k int) int {
	kind := writeKind(ids[k-1])
	for j := k + 1; j <= len(ids); j++ {
		if writeKind(ids[j-1]) == kind {
			return j
		}
	}
	return 0
}

// subresources are the last path segments that name a subresource, not
// an object.
var subresources = map[string]bool{"status": true, "scale": true, "eviction": true, "binding": true}

// writeKind is a write identity's verb, resource and subresource, without
// namespace, name or occurrence: "PATCH drinks.example status" for
// "PATCH drinks.example/NS/alpha/status #2". Paths are resource/name or
// resource/namespace/name, then an optional subresource (writePath).
func writeKind(id string) string {
	verb, path, _ := strings.Cut(id, " ")
	path, _, _ = strings.Cut(path, " #")
	parts := strings.Split(path, "/")
	kind := verb + " " + parts[0]
	if last := parts[len(parts)-1]; len(parts) >= 3 && subresources[last] {
		kind += " " + last
	}
	return kind
}

// eventSeries reports whether id is the event recorder's patch of an
// event series (either events API).
func eventSeries(id string) bool {
	kind := writeKind(id)
	return kind == "PATCH events" || kind == "PATCH events.events"
}

// leaseRenewal says whether id is a Lease update after the first of its
// Lease: a renewal, timed by the leader elector's clock.
func leaseRenewal(id string) bool {
	_, occurrence, _ := strings.Cut(id, " #")
	n, err := strconv.Atoi(occurrence)
	return writeKind(id) == "PUT leases.coordination" && err == nil && n > 1
}

// writeKinds maps the kinds of ids to the 1-based index of their first
// write that keep accepts (nil: any).
func writeKinds(ids []string, keep func(string) bool) map[string]int {
	first := map[string]int{}
	for k, id := range ids {
		if keep != nil && !keep(id) {
			continue
		}
		if _, ok := first[writeKind(id)]; !ok {
			first[writeKind(id)] = k + 1
		}
	}
	return first
}

// crashPoints chooses the write points from CRASH_POINTS and CRASH_SAMPLE;
// CRASH_POINTS=match:TEXT chooses the writes whose identity contains TEXT.
// The default sample plans kills only on stable writes (made by both
// fault-free runs, accepted, not an event series' patch).
func crashPoints(t *testing.T, ids []string, stable func(string) bool) []int {
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
		sample, err := strconv.Atoi(envOr("CRASH_SAMPLE", "2"))
		if err != nil || sample < 2 {
			t.Fatalf("CRASH_SAMPLE: %q", envOr("CRASH_SAMPLE", ""))
		}
		var candidates []int
		for k, id := range ids {
			if stable(id) {
				candidates = append(candidates, k+1)
			}
		}
		if len(candidates) == 0 {
			t.Fatal("no write of the fault-free run was made by the warm-up run too")
		}
		// Spread evenly over the stable writes, from the first to the
		// last, and the first stable write of every kind: a kind no trial
		// kills after is a kind of write whose crash recovery is not
		// tested.
		for i := range sample {
			points = append(points, candidates[i*(len(candidates)-1)/(sample-1)])
		}
		for _, k := range writeKinds(ids, stable) {
			points = append(points, k)
		}
		for kind := range writeKinds(ids, nil) {
			if _, ok := writeKinds(ids, stable)[kind]; !ok {
				t.Logf("no crash point of kind %s: none of its writes is stable (made by both fault-free runs, accepted, not an event series' patch nor a Lease renewal)", kind)
			}
		}
		slices.Sort(points)
		points = slices.Compact(points)
	}
	return points
}

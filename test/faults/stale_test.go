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

// TestStaleAndDroppedEvents: the scenario of
// TestCrashAtEveryWrite with the manager's view of the cluster perturbed
// at the proxy: every watch event delivered late; bursts coalesced, so
// that only the last event of each object reaches the informers; and a
// restart, mid-step, whose informers start from lists recorded steps
// earlier (an older resourceVersion) and must catch up by watching from
// there, or relist when the API server answers 410 Gone. The final state
// must equal the fault-free run's.
func TestStaleAndDroppedEvents(t *testing.T) {
	began := time.Now()
	h := newHarness(t)
	if warm := h.trial(0, fault{}, nil); warm.diff != "" {
		t.Fatalf("warm-up run: %s", warm.diff)
	}
	base := h.trial(1, fault{}, nil)
	if base.diff != "" {
		t.Fatalf("fault-free run: %s", base.diff)
	}
	t.Logf("fault-free run: %d writes, %d objects in the final state, %s", len(base.writes), len(base.snapshot), base.took.Round(time.Millisecond))
	// Steps (1-based) of scenario.steps: 4 edits alpha, 7 fails the
	// Guestbook over, 10 changes the OperatorConfig.
	cases := []struct {
		name string
		f    fault
	}{
		{"every event 400ms late", fault{perturb: Perturbation{Delay: 400 * time.Millisecond}}},
		{"bursts within 500ms coalesced to the last event of each object", fault{perturb: Perturbation{Coalesce: 500 * time.Millisecond}}},
		{"restart during the failover from lists of before the edit", fault{recordAt: 4, staleRestart: 7}},
		{"restart during the config change from lists of before the failover", fault{recordAt: 7, staleRestart: 10}},
		// A Drink created inside the hold is defaulted while the cache still
		// holds the OperatorConfig of before the change: the defaulter must
		// read it from the API server (it took the previous size, Medium
		// where the fault-free run has Large, when it read the cache).
		{"the same, informers held 3s on the old lists", fault{recordAt: 7, staleRestart: 10, staleHold: 3 * time.Second}},
		{"stale restart with coalesced events", fault{recordAt: 4, staleRestart: 10, perturb: Perturbation{Coalesce: 500 * time.Millisecond}}},
	}
	var table strings.Builder
	figures := map[string]any{"cases": len(cases)}
	var byCase, staleRestarts []map[string]any
	for i, tc := range cases {
		r := h.trial(i+2, tc.f, base.snapshot)
		st := h.proxy.Stats()
		outcome := "ok"
		if r.diff != "" {
			outcome = "final state differs"
			t.Errorf("%s: the final state differs from the fault-free run's:\n%s", tc.name, r.diff)
		}
		if (tc.f.perturb != Perturbation{}) && st.Delivered == st.Received && tc.f.perturb.Coalesce > 0 {
			t.Errorf("%s: no event was dropped (%d received, %d delivered): the perturbation did nothing", tc.name, st.Received, st.Delivered)
		}
		// The positive control of a delay: without it, a proxy that
		// delayed nothing would pass the case.
		if d := tc.f.perturb.Delay; d > 0 && (st.Delivered == 0 || st.MinHeld < d) {
			t.Errorf("%s: events were not delayed: %d delivered, the shortest held %s, want at least %s", tc.name, st.Delivered, st.MinHeld, d)
		}
		if tc.f.staleRestart > 0 && len(r.stale) == 0 {
			t.Errorf("%s: no list was answered from the snapshot", tc.name)
		}
		fmt.Fprintf(&table, "\n  %-70s %-20s %6s  writes %3d  watches %2d (watch-lists %2d, lists %2d)  events %4d received, %4d delivered, %d errors  stale lists %d %v",
			tc.name, outcome, r.took.Round(100*time.Millisecond), len(r.writes), st.Watches, st.WatchLists, st.Lists,
			st.Received, st.Delivered, st.Errors, len(r.stale), r.stale)

		byCase = append(byCase, map[string]any{
			"case": tc.name, "seconds": reliability.Seconds(r.took), "writes": len(r.writes),
			"eventsReceived": st.Received, "eventsDelivered": st.Delivered, "watchErrors": st.Errors, "staleLists": len(r.stale),
		})
		if tc.f.perturb.Delay > 0 && figures["eventDelayMs"] == nil {
			figures["eventDelayMs"] = tc.f.perturb.Delay.Milliseconds()
		}
		if tc.f.perturb.Coalesce > 0 && tc.f.staleRestart == 0 && figures["coalescedEventsReceived"] == nil {
			figures["coalesceWindowMs"] = tc.f.perturb.Coalesce.Milliseconds()
			figures["coalescedEventsReceived"] = st.Received
			figures["coalescedEventsDelivered"] = st.Delivered
		}
		if tc.f.staleRestart > 0 {
			lo, hi := rvRange(r.stale)
			apiRV, _ := strconv.Atoi(r.staleAt)
			staleRestarts = append(staleRestarts, map[string]any{
				"case": tc.name, "staleLists": len(r.stale), "minResourceVersion": lo, "maxResourceVersion": hi,
				"apiServerResourceVersion": apiRV, "holdSeconds": reliability.Seconds(tc.f.staleHold),
			})
			if tc.f.staleHold > 0 && figures["holdSeconds"] == nil {
				figures["holdSeconds"] = reliability.Seconds(tc.f.staleHold)
				figures["heldMinResourceVersion"] = lo
				figures["heldMaxResourceVersion"] = hi
				figures["heldAPIServerResourceVersion"] = apiRV
			}
		}
	}
	t.Logf("perturbations (outcome, trial time, writes, the proxy's counts):%s", table.String())
	figures["byCase"] = byCase
	figures["staleRestarts"] = staleRestarts
	figures["testSeconds"] = reliability.Seconds(time.Since(began))
	reliability.Save(t, figures, "FAULTS_MANAGER")
}

// rvRange is the lowest and the highest of resourceVersions (etcd's are
// integers); 0, 0 for none.
func rvRange(rvs []string) (lo, hi int) {
	var ns []int
	for _, s := range rvs {
		if n, err := strconv.Atoi(s); err == nil {
			ns = append(ns, n)
		}
	}
	if len(ns) == 0 {
		return 0, 0
	}
	return slices.Min(ns), slices.Max(ns)
}

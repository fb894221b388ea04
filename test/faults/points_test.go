package faults

import (
	"slices"
	"testing"
)

// The fault-free writes the tables below plan kills on.
var pointIDs = []string{
	"PUT leases.coordination/NS/lock #1",
	"POST configmaps/NS/alpha #1",
	"PATCH drinks.example/NS/alpha/status #1",
	"PATCH drinks.example/NS/alpha/status #2",
	"PUT leases.coordination/NS/lock #2",
	"PATCH operatorconfigs.operator/cluster/status #1",
	"PATCH customresourcedefinitions.apiextensions/drinks.example.com #1",
}

func TestWriteKind(t *testing.T) {
	for _, tc := range []struct{ id, want string }{
		{"PATCH drinks.example/NS/alpha/status #2", "PATCH drinks.example status"},
		{"POST configmaps/NS/alpha #1", "POST configmaps"},
		// Cluster-scoped with a subresource: three segments, as a
		// namespaced object without one has.
		{"PATCH operatorconfigs.operator/cluster/status #1", "PATCH operatorconfigs.operator status"},
		{"PATCH customresourcedefinitions.apiextensions/drinks.example.com #1", "PATCH customresourcedefinitions.apiextensions"},
		{"DELETE pods/NS/GB-0 #1", "DELETE pods"},
	} {
		if got := writeKind(tc.id); got != tc.want {
			t.Errorf("writeKind(%q) = %q, want %q", tc.id, got, tc.want)
		}
	}
}

// TestLeftOutOfSample: the writes the default sample leaves out because
// a fault-free run need not repeat them: the recorder's patch of an
// event series (not the event's creation), and a Lease's later updates,
// timed by the leader elector's clock (not its first, the acquisition).
func TestLeftOutOfSample(t *testing.T) {
	for _, tc := range []struct {
		id                        string
		eventSeries, leaseRenewal bool
	}{
		{id: "PATCH events.events/default/GB #1", eventSeries: true},
		{id: "PATCH events/myoperator-system/myoperator.example.com #2", eventSeries: true},
		{id: "POST events.events/default/GB #1"},
		{id: "PATCH guestbooks.webapp/GB/status #1"},
		{id: "PUT leases.coordination/NS/lock #1"},
		{id: "PUT leases.coordination/NS/lock #2", leaseRenewal: true},
		{id: "PUT leases.coordination/myoperator-system/myoperator.example.com #14", leaseRenewal: true},
		{id: "POST leases.coordination/NS/lock #1"},
		{id: "PUT configmaps/NS/alpha #2"},
	} {
		if got := eventSeries(tc.id); got != tc.eventSeries {
			t.Errorf("eventSeries(%q) = %v, want %v", tc.id, got, tc.eventSeries)
		}
		if got := leaseRenewal(tc.id); got != tc.leaseRenewal {
			t.Errorf("leaseRenewal(%q) = %v, want %v", tc.id, got, tc.leaseRenewal)
		}
	}
}

// TestRunPoint: a kill that does not fire is re-planned at the next write
// of its kind, and reported as not fired (for the table to fail) when no
// write of its kind is left; the trials' results are played by a table,
// since what is tested is the planning, not the manager.
func TestRunPoint(t *testing.T) {
	for _, tc := range []struct {
		name string
		k    int
		// fires are the writes whose trial kills; differs the ones whose
		// final state differs.
		fires, differs []int
		wantFired      int
		wantReplanned  []int
		wantTrials     int
	}{
		{name: "fires at the planned write", k: 3, fires: []int{3}, wantFired: 3, wantTrials: 1},
		{name: "re-planned at the next write of its kind", k: 3, fires: []int{4}, wantFired: 4, wantReplanned: []int{4}, wantTrials: 2},
		{name: "re-planned past other kinds", k: 1, fires: []int{5}, wantFired: 5, wantReplanned: []int{5}, wantTrials: 2},
		{name: "never fires: its kind has no later write", k: 4, wantFired: 0, wantTrials: 1},
		{name: "never fires anywhere", k: 3, wantFired: 0, wantReplanned: []int{4}, wantTrials: 2},
		{name: "a differing state ends the point", k: 1, differs: []int{1}, wantFired: 0, wantTrials: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trials := 0
			p := runPoint(pointIDs, tc.k, func(id string) result {
				trials++
				k := slices.Index(pointIDs, id) + 1
				r := result{killed: slices.Contains(tc.fires, k)}
				if slices.Contains(tc.differs, k) {
					r.diff = "- something"
				}
				return r
			})
			if p.fired != tc.wantFired || !slices.Equal(p.replanned, tc.wantReplanned) || trials != tc.wantTrials {
				t.Errorf("fired %d, re-planned %v, %d trials; want %d, %v, %d", p.fired, p.replanned, trials, tc.wantFired, tc.wantReplanned, tc.wantTrials)
			}
		})
	}
}

// TestCrashPointsCoverEveryKind: the default sample kills after at least
// one write of every kind.
func TestCrashPointsCoverEveryKind(t *testing.T) {
	t.Setenv("CRASH_POINTS", "")
	t.Setenv("CRASH_SAMPLE", "2")
	// The operator status patch is not made by every fault-free run.
	stable := func(id string) bool { return id != "PATCH operatorconfigs.operator/cluster/status #1" }
	points := crashPoints(t, pointIDs, stable)
	covered := map[string]bool{}
	for _, k := range points {
		covered[writeKind(pointIDs[k-1])] = true
	}
	for kind := range writeKinds(pointIDs, stable) {
		if !covered[kind] {
			t.Errorf("no crash point of kind %s in %v", kind, points)
		}
	}
	if want := []int{1, 2, 3, 7}; !slices.Equal(points, want) {
		t.Errorf("points %v, want %v", points, want)
	}
}

package bench

import (
	"strings"
	"testing"
)

// A scrape of a manager whose priority queue holds Drinks at two
// priorities, with the Guestbook controller's series that must not count.
const managerScrape = `# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="drink",result="success"} 995
controller_runtime_reconcile_total{controller="drink",result="error"} 2
controller_runtime_reconcile_total{controller="drink",result="requeue"} 3
controller_runtime_reconcile_total{controller="guestbook",result="success"} 7
# TYPE controller_runtime_active_workers gauge
controller_runtime_active_workers{controller="drink"} 4
controller_runtime_active_workers{controller="guestbook"} 1
# TYPE workqueue_depth gauge
workqueue_depth{controller="drink",name="drink",priority="0"} 10
workqueue_depth{controller="drink",name="drink",priority="-100"} 990
workqueue_depth{controller="guestbook",name="guestbook",priority="0"} 5
`

func TestProgressOf(t *testing.T) {
	m, err := ParseMetrics(managerScrape)
	if err != nil {
		t.Fatal(err)
	}
	empty, err := ParseMetrics("")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		m    Metrics
		want progress
	}{
		{"every result and priority of the drink controller only", m, progress{Reconciles: 1000, Depth: 1000, Active: 4}},
		{"before the controller starts", empty, progress{}},
	} {
		if got := progressOf(tc.m); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestOperandWrites(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    Writes
		want float64
	}{
		{"none", Writes{}, 0},
		{"status patches and ConfigMap creates count", Writes{"PATCH drinks/status": 1000, "POST configmaps/": 1}, 1001},
		{"Events, CRDs and webhook configurations do not", Writes{
			"POST events/": 2, "PATCH customresourcedefinitions/": 3, "PATCH validatingwebhookconfigurations/": 1, "APPLY drinks/": 4,
		}, 4},
		{"a resource that only starts like drinks does not", Writes{"POST drinksextra/": 5}, 0},
	} {
		got := operandWrites(tc.w)
		t.Logf("%s: %v -> %v", tc.name, tc.w, got)
		if got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestReportScaleRows(t *testing.T) {
	for _, tc := range []struct {
		name string
		rec  Record
		want bool
	}{
		{"a record made before the scale measures", Record{N: 1000}, false},
		{"a record with them", Record{N: 1000, Restart: RestartResult{Reconciles: 1000}}, true},
	} {
		var b strings.Builder
		Report(&b, []Record{tc.rec})
		got := strings.Contains(b.String(), "restart: Drink and ConfigMap writes")
		t.Logf("%s: restart row printed %v", tc.name, got)
		if got != tc.want {
			t.Errorf("%s: restart row printed %v, want %v", tc.name, got, tc.want)
		}
	}
}

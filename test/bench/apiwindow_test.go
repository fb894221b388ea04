package bench

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// histogram is one histogram series in the text format: its buckets
// (le=count pairs, cumulative), the +Inf bucket, its sum and its count.
func histogram(name, labels string, count, sum float64, buckets ...float64) string {
	var b strings.Builder
	for i := 0; i+1 < len(buckets); i += 2 {
		fmt.Fprintf(&b, "%s_bucket{%s,le=\"%g\"} %g\n", name, labels, buckets[i], buckets[i+1])
	}
	fmt.Fprintf(&b, "%s_bucket{%s,le=\"+Inf\"} %g\n%s_sum{%s} %g\n%s_count{%s} %g\n", name, labels, count, name, labels, sum, name, labels, count)
	return b.String()
}

const (
	requests    = "apiserver_request_duration_seconds"
	webhooks    = "apiserver_admission_webhook_admission_duration_seconds"
	queueWaits  = "apiserver_flowcontrol_request_wait_duration_seconds"
	delivery    = "apiserver_watch_events_dispatch_duration_seconds"
	lists       = "apiserver_storage_list_duration_seconds"
	conversions = "apiserver_crd_conversion_webhook_duration_seconds"
	cmCreates   = `resource="configmaps",subresource="",verb="POST"`
	statusPuts  = `resource="drinks",subresource="status",verb="PUT"`
	drinkLists  = `group="example.com",resource="drinks",streamed="false"`
)

// Two scrapes of an API server some requests apart: what a kill's record
// keeps of them.
var windowBefore = `process_cpu_seconds_total 100
go_cpu_classes_gc_total_cpu_seconds_total 20
apiserver_terminated_watchers_total{group="example.com",resource="drinks"} 1
apiserver_init_events_total{group="example.com",resource="drinks"} 1000
` + histogram(requests, cmCreates, 10, 0.5, 0.1, 10, 1, 10) +
	histogram(requests, statusPuts, 5, 0.2, 0.1, 5) +
	histogram(lists, drinkLists, 5, 100)

var windowAfter = `process_cpu_seconds_total 130.5
go_cpu_classes_gc_total_cpu_seconds_total 28
apiserver_terminated_watchers_total{group="example.com",resource="drinks"} 3
apiserver_terminated_watchers_total{group="",resource="configmaps"} 0
apiserver_init_events_total{group="example.com",resource="drinks"} 51000
apiserver_init_events_total{group="",resource="configmaps"} 50000
` + histogram(requests, cmCreates, 20, 6.5, 0.1, 12, 1, 20) +
	histogram(requests, statusPuts, 5, 0.2, 0.1, 5) +
	histogram(requests, `resource="leases",subresource="",verb="LIST"`, 4, 4, 0.1, 0, 1, 3) +
	histogram(requests, `resource="drinks",subresource="",verb="WATCH"`, 9, 900) +
	histogram(requests, `resource="pods",subresource="",verb="GET"`, 9, 9) +
	histogram(webhooks, `name="fence.example.com",operation="CREATE",rejected="false",type="validating"`, 8, 2) +
	histogram(webhooks, `name="fence.example.com",operation="CREATE",rejected="true",type="validating"`, 2, 8) +
	histogram(queueWaits, `execute="true",flow_schema="service-accounts",priority_level="workload-low"`, 4, 1) +
	histogram(queueWaits, `execute="false",flow_schema="service-accounts",priority_level="workload-low"`, 3, 30) +
	histogram(delivery, `group="example.com",resource="drinks",stage="total"`, 10, 5) +
	histogram(delivery, `group="example.com",resource="drinks",stage="filter"`, 10, 1) +
	histogram(lists, drinkLists, 8, 160) +
	histogram("apiserver_watch_cache_read_wait_seconds", `group="coordination.k8s.io",resource="leases"`, 2, 0.1) +
	histogram("apiserver_watch_cache_read_wait_seconds", `group="",resource="pods"`, 1, 1) +
	histogram(conversions, `crd_name="drinks.example.com",from_version="v1",succeeded="true",to_version="v1alpha1"`, 40, 0.4)

func TestAPIWindow(t *testing.T) {
	before, err := ParseMetrics(windowBefore)
	if err != nil {
		t.Fatal(err)
	}
	after, err := ParseMetrics(windowAfter)
	if err != nil {
		t.Fatal(err)
	}
	w := apiWindow(before, after)
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"CPU", w.CPUSeconds, 30.5},
		{"collector", w.GCCPUSeconds, 8.0},
		// The ConfigMap creates spent 6 s in the window, the Lease lists
		// 4 s; the status updates made none and the watches and the pods'
		// requests are not the operator's kinds of request.
		{"requests, the most time first", w.Requests, []Timed{
			{Key: "POST configmaps", Count: 10, MeanSeconds: 0.6, P99Seconds: 0.1 + 0.9*(9.9-2)/8},
			{Key: "LIST leases", Count: 4, MeanSeconds: 1, P99Seconds: 1},
		}},
		// Admitted and refused calls of one webhook and operation are one
		// key: the refusal is what the fence does, not a different call.
		{"webhooks", w.Webhooks, []Timed{{Key: "fence.example.com CREATE", Count: 10, MeanSeconds: 1, P99Seconds: 0}}},
		{"queue waits of executed requests only", w.QueueWaits, []Timed{{Key: "workload-low", Count: 4, MeanSeconds: 0.25, P99Seconds: 0}}},
		{"event delivery, total stage only", w.EventDelivery, []Timed{{Key: "drinks", Count: 10, MeanSeconds: 0.5, P99Seconds: 0}}},
		{"consistent reads of the operator's kinds only", w.CacheReadWaits, []Timed{{Key: "leases", Count: 2, MeanSeconds: 0.05, P99Seconds: 0}}},
		{"storage lists", w.StorageLists, []Timed{{Key: "drinks", Count: 3, MeanSeconds: 20, P99Seconds: 0}}},
		{"conversions, new series", w.Conversions, []Timed{{Key: "drinks.example.com v1 v1alpha1", Count: 40, MeanSeconds: 0.01, P99Seconds: 0}}},
		{"init events", w.InitEvents, map[string]float64{"drinks": 50000, "configmaps": 50000}},
		{"terminated, the resources that moved", w.TerminatedWatchers, map[string]float64{"drinks": 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(round(tc.got), round(tc.want)) {
				t.Errorf("got %+v, want %+v", tc.got, tc.want)
			}
		})
	}
}

// round takes the last digits off a figure, or off the times of a []Timed,
// which the window computes by subtraction and interpolation.
func round(v any) any {
	r := func(f float64) float64 { return math.Round(f*1e9) / 1e9 }
	switch v := v.(type) {
	case float64:
		return r(v)
	case []Timed:
		var out []Timed
		for _, t := range v {
			out = append(out, Timed{Key: t.Key, Count: r(t.Count), MeanSeconds: r(t.MeanSeconds), P99Seconds: r(t.P99Seconds)})
		}
		return out
	}
	return v
}

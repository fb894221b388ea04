package bench

import (
	"math"
	"reflect"
	"testing"
)

// Two scrapes of an API server 10 requests apart: what a kill's record
// keeps of them.
const windowBefore = `process_cpu_seconds_total 100
go_cpu_classes_gc_total_cpu_seconds_total 20
apiserver_request_duration_seconds_bucket{resource="configmaps",subresource="",verb="POST",le="0.1"} 10
apiserver_request_duration_seconds_bucket{resource="configmaps",subresource="",verb="POST",le="1"} 10
apiserver_request_duration_seconds_bucket{resource="configmaps",subresource="",verb="POST",le="+Inf"} 10
apiserver_request_duration_seconds_sum{resource="configmaps",subresource="",verb="POST"} 0.5
apiserver_request_duration_seconds_count{resource="configmaps",subresource="",verb="POST"} 10
apiserver_request_duration_seconds_bucket{resource="drinks",subresource="status",verb="PUT",le="0.1"} 5
apiserver_request_duration_seconds_bucket{resource="drinks",subresource="status",verb="PUT",le="1"} 5
apiserver_request_duration_seconds_bucket{resource="drinks",subresource="status",verb="PUT",le="+Inf"} 5
apiserver_request_duration_seconds_sum{resource="drinks",subresource="status",verb="PUT"} 0.2
apiserver_request_duration_seconds_count{resource="drinks",subresource="status",verb="PUT"} 5
apiserver_terminated_watchers_total{group="example.com",resource="drinks"} 1
apiserver_init_events_total{group="example.com",resource="drinks"} 1000
`

const windowAfter = `process_cpu_seconds_total 130.5
go_cpu_classes_gc_total_cpu_seconds_total 28
apiserver_request_duration_seconds_bucket{resource="configmaps",subresource="",verb="POST",le="0.1"} 12
apiserver_request_duration_seconds_bucket{resource="configmaps",subresource="",verb="POST",le="1"} 20
apiserver_request_duration_seconds_bucket{resource="configmaps",subresource="",verb="POST",le="+Inf"} 20
apiserver_request_duration_seconds_sum{resource="configmaps",subresource="",verb="POST"} 6.5
apiserver_request_duration_seconds_count{resource="configmaps",subresource="",verb="POST"} 20
apiserver_request_duration_seconds_bucket{resource="drinks",subresource="status",verb="PUT",le="0.1"} 5
apiserver_request_duration_seconds_bucket{resource="drinks",subresource="status",verb="PUT",le="1"} 5
apiserver_request_duration_seconds_bucket{resource="drinks",subresource="status",verb="PUT",le="+Inf"} 5
apiserver_request_duration_seconds_sum{resource="drinks",subresource="status",verb="PUT"} 0.2
apiserver_request_duration_seconds_count{resource="drinks",subresource="status",verb="PUT"} 5
apiserver_request_duration_seconds_bucket{resource="leases",subresource="",verb="LIST",le="0.1"} 0
apiserver_request_duration_seconds_bucket{resource="leases",subresource="",verb="LIST",le="1"} 3
apiserver_request_duration_seconds_bucket{resource="leases",subresource="",verb="LIST",le="+Inf"} 4
apiserver_request_duration_seconds_sum{resource="leases",subresource="",verb="LIST"} 4
apiserver_request_duration_seconds_count{resource="leases",subresource="",verb="LIST"} 4
apiserver_request_duration_seconds_bucket{resource="drinks",subresource="",verb="WATCH",le="+Inf"} 9
apiserver_request_duration_seconds_sum{resource="drinks",subresource="",verb="WATCH"} 900
apiserver_request_duration_seconds_count{resource="drinks",subresource="",verb="WATCH"} 9
apiserver_request_duration_seconds_bucket{resource="pods",subresource="",verb="GET",le="+Inf"} 9
apiserver_request_duration_seconds_sum{resource="pods",subresource="",verb="GET"} 9
apiserver_request_duration_seconds_count{resource="pods",subresource="",verb="GET"} 9
apiserver_admission_webhook_admission_duration_seconds_bucket{name="fence.example.com",operation="CREATE",rejected="false",type="validating",le="+Inf"} 8
apiserver_admission_webhook_admission_duration_seconds_sum{name="fence.example.com",operation="CREATE",rejected="false",type="validating"} 2
apiserver_admission_webhook_admission_duration_seconds_count{name="fence.example.com",operation="CREATE",rejected="false",type="validating"} 8
apiserver_admission_webhook_admission_duration_seconds_bucket{name="fence.example.com",operation="CREATE",rejected="true",type="validating",le="+Inf"} 2
apiserver_admission_webhook_admission_duration_seconds_sum{name="fence.example.com",operation="CREATE",rejected="true",type="validating"} 8
apiserver_admission_webhook_admission_duration_seconds_count{name="fence.example.com",operation="CREATE",rejected="true",type="validating"} 2
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="service-accounts",priority_level="workload-low",le="+Inf"} 4
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="true",flow_schema="service-accounts",priority_level="workload-low"} 1
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="true",flow_schema="service-accounts",priority_level="workload-low"} 4
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="false",flow_schema="service-accounts",priority_level="workload-low",le="+Inf"} 3
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="false",flow_schema="service-accounts",priority_level="workload-low"} 30
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="false",flow_schema="service-accounts",priority_level="workload-low"} 3
apiserver_watch_events_dispatch_duration_seconds_bucket{group="example.com",resource="drinks",stage="total",le="+Inf"} 10
apiserver_watch_events_dispatch_duration_seconds_sum{group="example.com",resource="drinks",stage="total"} 5
apiserver_watch_events_dispatch_duration_seconds_count{group="example.com",resource="drinks",stage="total"} 10
apiserver_watch_events_dispatch_duration_seconds_bucket{group="example.com",resource="drinks",stage="filter",le="+Inf"} 10
apiserver_watch_events_dispatch_duration_seconds_sum{group="example.com",resource="drinks",stage="filter"} 1
apiserver_watch_events_dispatch_duration_seconds_count{group="example.com",resource="drinks",stage="filter"} 10
apiserver_terminated_watchers_total{group="example.com",resource="drinks"} 3
apiserver_terminated_watchers_total{group="",resource="configmaps"} 0
apiserver_init_events_total{group="example.com",resource="drinks"} 51000
apiserver_init_events_total{group="",resource="configmaps"} 50000
`

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
		{"no consistent read", w.CacheReadWaits, []Timed(nil)},
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

package bench

import (
	"cmp"
	"maps"
	"slices"
)

// APIWindow is what the API server did between two scrapes of its /metrics
// (a kill's: just before the SIGKILL and after the probes), reduced to the
// series that tell a busy server from one slow step: its CPU and its
// garbage collector's, each request the operator makes by kind, the
// webhooks, the priority levels' queues, the consistent reads' wait for a
// fresh watch cache and the delivery of watch events. The scrapes
// themselves stay in the run's directory, which a new machine does not
// have; this part of them is kept in the record, so that a later reading
// of a run does not depend on that directory.
type APIWindow struct {
	// CPUSeconds is the API server's CPU in the window, GCCPUSeconds the
	// part of it its garbage collector used (Go's /cpu/classes/gc/total,
	// an estimate the runtime keeps).
	CPUSeconds, GCCPUSeconds float64
	// Requests are the requests for Drinks, ConfigMaps and Leases by
	// "VERB resource[/subresource]" (watches, which last as long as they
	// are open, left out).
	Requests []Timed `json:",omitempty"`
	// Webhooks are the admission webhook calls by "name OPERATION".
	Webhooks []Timed `json:",omitempty"`
	// QueueWaits are the requests' waits in API Priority and Fairness by
	// priority level (those that executed).
	QueueWaits []Timed `json:",omitempty"`
	// CacheReadWaits are the consistent reads' waits for the watch cache
	// of Drinks, ConfigMaps and Leases to catch up with etcd.
	CacheReadWaits []Timed `json:",omitempty"`
	// EventDelivery is each resource's watch events from etcd to the
	// watchers ("total" stage of the dispatch).
	EventDelivery []Timed `json:",omitempty"`
	// Conversions are the conversion webhook's calls by "from to"
	// version, and StorageLists the LISTs from etcd by resource (the
	// watch caches' consistency checks among them), which for a version
	// other than the one stored convert every object they read.
	Conversions  []Timed `json:",omitempty"`
	StorageLists []Timed `json:",omitempty"`
	// InitEvents are the events new watches were sent to start, and
	// TerminatedWatchers the watches the API server closed because they
	// fell behind, both by resource.
	InitEvents, TerminatedWatchers map[string]float64 `json:",omitempty"`
}

// Timed is the observations one histogram series made in a window: how
// many, their mean and their 99th percentile as Prometheus would estimate
// it from the buckets.
type Timed struct {
	Key                     string
	Count                   float64
	MeanSeconds, P99Seconds float64
}

// windowResources are the kinds whose requests an APIWindow keeps.
var windowResources = []string{"drinks", "configmaps", "leases"}

// apiWindow reduces two scrapes of the API server to an APIWindow.
func apiWindow(before, after Metrics) APIWindow {
	delta := func(name string) float64 { return after.Sum(name, nil) - before.Sum(name, nil) }
	return APIWindow{
		CPUSeconds:   delta("process_cpu_seconds_total"),
		GCCPUSeconds: delta("go_cpu_classes_gc_total_cpu_seconds_total"),
		Requests: timedBy(before, after, "apiserver_request_duration_seconds", func(l map[string]string) string {
			if !slices.Contains(windowResources, l["resource"]) || l["verb"] == "WATCH" || l["verb"] == "WATCHLIST" || l["verb"] == "CONNECT" {
				return ""
			}
			if l["subresource"] != "" {
				return l["verb"] + " " + l["resource"] + "/" + l["subresource"]
			}
			return l["verb"] + " " + l["resource"]
		}),
		Webhooks: timedBy(before, after, admissionDuration, func(l map[string]string) string {
			return l["name"] + " " + l["operation"]
		}),
		QueueWaits: timedBy(before, after, "apiserver_flowcontrol_request_wait_duration_seconds", func(l map[string]string) string {
			if l["execute"] != "true" {
				return ""
			}
			return l["priority_level"]
		}),
		CacheReadWaits: timedBy(before, after, "apiserver_watch_cache_read_wait_seconds", func(l map[string]string) string {
			// Every informer's first consistent read counts here too, of
			// every kind the API server serves: only the operator's kinds
			// say anything about its requests.
			if !slices.Contains(windowResources, l["resource"]) {
				return ""
			}
			return l["resource"]
		}),
		EventDelivery: timedBy(before, after, "apiserver_watch_events_dispatch_duration_seconds", func(l map[string]string) string {
			if l["stage"] != "total" {
				return ""
			}
			return l["resource"]
		}),
		Conversions: timedBy(before, after, "apiserver_crd_conversion_webhook_duration_seconds", func(l map[string]string) string {
			return l["crd_name"] + " " + l["from_version"] + " " + l["to_version"]
		}),
		StorageLists: timedBy(before, after, "apiserver_storage_list_duration_seconds", func(l map[string]string) string {
			return l["resource"]
		}),
		InitEvents:         countedBy(before, after, "apiserver_init_events_total", "resource"),
		TerminatedWatchers: countedBy(before, after, "apiserver_terminated_watchers_total", "resource"),
	}
}

// timedBy groups the histogram name's series by keyOf (an empty key leaves
// a series out) and gives each group's observations between the scrapes,
// the groups that spent the most time first.
func timedBy(before, after Metrics, name string, keyOf func(map[string]string) string) []Timed {
	keys := map[string]bool{}
	for _, s := range after {
		if s.Name == name+"_count" {
			if k := keyOf(s.Labels); k != "" {
				keys[k] = true
			}
		}
	}
	var out []Timed
	for _, key := range slices.Sorted(maps.Keys(keys)) {
		match := func(l map[string]string) bool { return keyOf(l) == key }
		count := after.Sum(name+"_count", match) - before.Sum(name+"_count", match)
		if count <= 0 {
			continue
		}
		sum := after.Sum(name+"_sum", match) - before.Sum(name+"_sum", match)
		h := after.HistogramOf(name, match).Minus(before.HistogramOf(name, match))
		out = append(out, Timed{Key: key, Count: count, MeanSeconds: sum / count, P99Seconds: h.Quantile(0.99)})
	}
	slices.SortStableFunc(out, func(a, b Timed) int { return cmp.Compare(b.Count*b.MeanSeconds, a.Count*a.MeanSeconds) })
	return out
}

// countedBy is the counter name's increase between the scrapes by the value
// of one label, the labels that did not move left out.
func countedBy(before, after Metrics, name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range after {
		if s.Name == name {
			out[s.Labels[label]] += s.Value
		}
	}
	for _, s := range before {
		if s.Name == name {
			out[s.Labels[label]] -= s.Value
		}
	}
	maps.DeleteFunc(out, func(_ string, v float64) bool { return v <= 0 })
	if len(out) == 0 {
		return nil
	}
	return out
}

package bench

import (
	"context"
	"maps"
	"slices"
	"strings"
)

// readVerbs are the request verbs that change nothing.
var readVerbs = []string{"GET", "LIST", "WATCH", "WATCHLIST", "CONNECT"}

// drinkWebhooks are the admission webhooks a Drink write calls
// (config/webhook).
var drinkWebhooks = []string{"mdrink.example.com", "vdrink.example.com"}

const (
	requestTotal      = "apiserver_request_total"
	admissionDuration = "apiserver_admission_webhook_admission_duration_seconds"
)

// Writes counts write requests by "VERB resource/subresource", and those
// the API server refused by "VERB resource/subresource CODE" (a 409 is a
// write computed from a stale read that optimistic concurrency stopped:
// nothing was written).
type Writes map[string]float64

// writesOf reads the API server's write counters. Leases are left out: the
// API server renews its own identity Lease every few seconds, and the
// phases that count writes run the manager without leader election.
func writesOf(m Metrics) Writes {
	w := Writes{}
	for _, s := range m {
		if s.Name != requestTotal || slices.Contains(readVerbs, s.Labels["verb"]) || s.Labels["resource"] == "leases" {
			continue
		}
		key := s.Labels["verb"] + " " + s.Labels["resource"] + "/" + s.Labels["subresource"]
		if code := s.Labels["code"]; code != "" && !strings.HasPrefix(code, "2") {
			key += " " + code
		}
		w[key] += s.Value
	}
	return w
}

// Minus is what was written between before and w.
func (w Writes) Minus(before Writes) Writes {
	out := Writes{}
	for k, v := range w {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// Total is the number of writes.
func (w Writes) Total() float64 {
	var t float64
	for _, v := range w {
		t += v
	}
	return t
}

// String lists the writes by kind, sorted, for the report.
func (w Writes) String() string {
	parts := make([]string, 0, len(w))
	for _, k := range slices.Sorted(maps.Keys(w)) {
		parts = append(parts, k+"="+formatCount(w[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// conflictsOf counts 409 answers to any request.
func conflictsOf(m Metrics) float64 {
	return m.Sum(requestTotal, func(l map[string]string) bool { return l["code"] == "409" })
}

// admissionOf is the API server's histogram of calls to the Drink webhooks.
func admissionOf(m Metrics) Histogram {
	return m.HistogramOf(admissionDuration, func(l map[string]string) bool {
		return slices.Contains(drinkWebhooks, l["name"])
	})
}

// snapshot is what a phase compares before and after: the API server's
// counters, the manager's CPU time and its own webhook histogram, and the
// machine's CPU time, which tells whether a phase was CPU-bound.
type snapshot struct {
	writes     Writes
	conflicts  float64
	admission  Histogram
	apiCPU     float64
	mgrCPU     float64
	mgrWebhook Histogram
	cpu        cpuTimes
	benchCPU   float64
}

// takeSnapshot reads the API server's metrics, the manager's (when m is
// not nil) and /proc/stat.
func takeSnapshot(ctx context.Context, cp *ControlPlane, m *Manager) (snapshot, error) {
	api, err := cp.APIMetrics(ctx)
	if err != nil {
		return snapshot{}, err
	}
	s := snapshot{writes: writesOf(api), conflicts: conflictsOf(api), admission: admissionOf(api), apiCPU: api.Value(cpuSeconds)}
	if m != nil {
		mm, err := m.Metrics(ctx)
		if err != nil {
			return snapshot{}, err
		}
		s.mgrCPU = mm.Value(cpuSeconds)
		s.mgrWebhook = mm.HistogramOf(webhookLatency, func(l map[string]string) bool { return strings.HasSuffix(l["webhook"], "-drink") })
	}
	s.benchCPU = ownCPU()
	s.cpu, err = readCPU()
	return s, err
}

const (
	cpuSeconds = "process_cpu_seconds_total"
	// webhookLatency is controller-runtime's histogram of the webhook
	// server's own handling time; its 10 ms bound gives an exact share.
	webhookLatency = "controller_runtime_webhook_latency_seconds"
)

// Admission summarizes webhook calls as the API server timed them. Its
// buckets are coarse (5 ms, 25 ms, 100 ms), so the exact shares at 5 and
// 25 ms go with the interpolated percentiles, and the manager's own
// histogram adds the exact share handled within 10 ms.
type Admission struct {
	Calls                 float64
	P50, P99              float64 // seconds, interpolated in the buckets
	Within5ms, Within25ms float64 // exact shares of calls
	ServedWithin10ms      float64 // exact share, the manager's handling only
}

// PhaseMetrics is what the API server, the manager and the machine counted
// during a phase.
type PhaseMetrics struct {
	Writes    Writes
	Conflicts float64
	Admission Admission
	// APIServerCPU, ManagerCPU and BenchCPU (this program: the plain client
	// or the observer) are CPU seconds; MachineBusy is the busy share of all
	// cores.
	APIServerCPU, ManagerCPU, BenchCPU, MachineBusy float64
}

func (s snapshot) until(after snapshot) PhaseMetrics {
	h := after.admission.Minus(s.admission)
	return PhaseMetrics{
		Writes:    after.writes.Minus(s.writes),
		Conflicts: after.conflicts - s.conflicts,
		Admission: Admission{
			Calls: h.Total, P50: h.Quantile(0.5), P99: h.Quantile(0.99),
			Within5ms: h.FractionWithin(0.005), Within25ms: h.FractionWithin(0.025),
			ServedWithin10ms: after.mgrWebhook.Minus(s.mgrWebhook).FractionWithin(0.01),
		},
		APIServerCPU: after.apiCPU - s.apiCPU, ManagerCPU: after.mgrCPU - s.mgrCPU, BenchCPU: after.benchCPU - s.benchCPU,
		MachineBusy: busyBetween(s.cpu, after.cpu),
	}
}

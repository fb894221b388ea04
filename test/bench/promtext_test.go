package bench

import (
	"math"
	"testing"
)

const exposition = `# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",resource="drinks",subresource="",verb="POST"} 1000
apiserver_request_total{code="409",component="apiserver",resource="drinks",subresource="status",verb="PATCH"} 3
apiserver_request_total{code="200",component="apiserver",resource="configmaps",subresource="",verb="APPLY"} 1e+03
apiserver_request_total{code="200",resource="drinks",subresource="",verb="LIST"} 12 1700000000000
weird{msg="a \"quoted\", {braced} value"} 1.5
go_memstats_heap_inuse_bytes 4.2e+07
h_bucket{name="a",le="0.005"} 90
h_bucket{name="a",le="0.025"} 99
h_bucket{name="a",le="+Inf"} 100
h_bucket{name="b",le="0.005"} 10
h_bucket{name="b",le="0.025"} 10
h_bucket{name="b",le="+Inf"} 10
`

func TestParseMetrics(t *testing.T) {
	m, err := ParseMetrics(exposition)
	if err != nil {
		t.Fatal(err)
	}
	drinkWrites := func(l map[string]string) bool { return l["resource"] == "drinks" && l["verb"] != "LIST" }
	for _, tc := range []struct {
		name string
		got  float64
		want float64
	}{
		{"writes to drinks", m.Sum("apiserver_request_total", drinkWrites), 1003},
		{"conflicts", m.Sum("apiserver_request_total", func(l map[string]string) bool { return l["code"] == "409" }), 3},
		{"exponent notation", m.Sum("apiserver_request_total", func(l map[string]string) bool { return l["verb"] == "APPLY" }), 1000},
		{"timestamp ignored", m.Sum("apiserver_request_total", func(l map[string]string) bool { return l["verb"] == "LIST" }), 12},
		{"no labels", m.Value("go_memstats_heap_inuse_bytes"), 4.2e7},
		{"absent", m.Value("nothing"), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
	for _, s := range m {
		if s.Name == "weird" && s.Labels["msg"] != `a "quoted", {braced} value` {
			t.Errorf("escaped label value parsed as %q", s.Labels["msg"])
		}
	}
}

func TestParseMetricsRejectsGarbage(t *testing.T) {
	for _, bad := range []string{"novalue", `x{a="b"} notanumber`, `x{a="unterminated} 1`, `x{a=b} 1`} {
		if _, err := ParseMetrics(bad); err == nil {
			t.Errorf("ParseMetrics(%q) accepted it", bad)
		}
	}
}

func TestHistogram(t *testing.T) {
	m, err := ParseMetrics(exposition)
	if err != nil {
		t.Fatal(err)
	}
	onlyA := func(l map[string]string) bool { return l["name"] == "a" }
	a := m.HistogramOf("h", onlyA)
	both := m.HistogramOf("h", nil)
	later := Histogram{Bounds: []float64{0.005, 0.025}, Counts: []float64{190, 200}, Total: 201}
	for _, tc := range []struct {
		name string
		got  float64
		want float64
	}{
		{"p50 inside the first bucket", a.Quantile(0.5), 0.005 * 50 / 90},
		{"p99 at the second bound", a.Quantile(0.99), 0.025},
		{"p95 interpolated", a.Quantile(0.95), 0.005 + 0.02*5/9},
		{"p100 beyond the last bound", a.Quantile(1), 0.025},
		{"sum of series", both.Total, 110},
		{"fraction within 5 ms", both.FractionWithin(0.005), 100.0 / 110},
		{"fraction at an unknown bound", both.FractionWithin(0.1), 0},
		{"bound off in the last digits", Histogram{Bounds: []float64{0.010000000000000002}, Counts: []float64{3}, Total: 4}.FractionWithin(0.01), 0.75},
		{"delta total", later.Minus(a).Total, 101},
		{"delta first bucket", later.Minus(a).Counts[0], 100},
		{"empty", Histogram{}.Quantile(0.99), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if math.Abs(tc.got-tc.want) > 1e-12 {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

package bench

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one line of the Prometheus text exposition format.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Metrics are the samples of one scrape, one per line of the text format
// (a histogram gives its _bucket, _sum and _count samples), which is how
// the bench sums and filters series.
type Metrics []Sample

// ParseMetrics parses the Prometheus text format with Prometheus's own
// parser (expfmt) and flattens it into samples.
func ParseMetrics(text string) (Metrics, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, err
	}
	names := slices.Sorted(maps.Keys(families))
	var out Metrics
	for _, name := range names {
		for _, m := range families[name].GetMetric() {
			out = append(out, samplesOf(name, m)...)
		}
	}
	return out, nil
}

// samplesOf flattens one metric into the samples its text lines hold.
func samplesOf(name string, m *dto.Metric) []Sample {
	labels := func(extra ...string) map[string]string {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	switch {
	case m.GetHistogram() != nil:
		h := m.GetHistogram()
		out := []Sample{
			{Name: name + "_sum", Labels: labels(), Value: h.GetSampleSum()},
			{Name: name + "_count", Labels: labels(), Value: float64(h.GetSampleCount())},
			{Name: name + "_bucket", Labels: labels("le", "+Inf"), Value: float64(h.GetSampleCount())},
		}
		for _, b := range h.GetBucket() {
			if math.IsInf(b.GetUpperBound(), 1) {
				continue // the +Inf bucket is the count, above
			}
			out = append(out, Sample{Name: name + "_bucket", Labels: labels("le", strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)),
				Value: float64(b.GetCumulativeCount())})
		}
		return out
	case m.GetSummary() != nil:
		sm := m.GetSummary()
		out := []Sample{
			{Name: name + "_sum", Labels: labels(), Value: sm.GetSampleSum()},
			{Name: name + "_count", Labels: labels(), Value: float64(sm.GetSampleCount())},
		}
		for _, q := range sm.GetQuantile() {
			out = append(out, Sample{Name: name, Labels: labels("quantile", strconv.FormatFloat(q.GetQuantile(), 'g', -1, 64)), Value: q.GetValue()})
		}
		return out
	case m.GetCounter() != nil:
		return []Sample{{Name: name, Labels: labels(), Value: m.GetCounter().GetValue()}}
	case m.GetGauge() != nil:
		return []Sample{{Name: name, Labels: labels(), Value: m.GetGauge().GetValue()}}
	default:
		return []Sample{{Name: name, Labels: labels(), Value: m.GetUntyped().GetValue()}}
	}
}

// Sum adds the values of the samples named name whose labels match.
func (m Metrics) Sum(name string, match func(map[string]string) bool) float64 {
	var total float64
	for _, s := range m {
		if s.Name == name && (match == nil || match(s.Labels)) {
			total += s.Value
		}
	}
	return total
}

// Value returns the first sample named name, or 0.
func (m Metrics) Value(name string) float64 {
	for _, s := range m {
		if s.Name == name {
			return s.Value
		}
	}
	return 0
}

// Histogram is a cumulative histogram: Counts[i] observations were at most
// Bounds[i]; Total counts all of them (the +Inf bucket).
type Histogram struct {
	Bounds []float64
	Counts []float64
	Total  float64
}

// HistogramOf adds up the buckets of the histogram name (its _bucket series)
// over every series whose labels match.
func (m Metrics) HistogramOf(name string, match func(map[string]string) bool) Histogram {
	byBound := map[float64]float64{}
	for _, s := range m {
		if s.Name != name+"_bucket" || (match != nil && !match(s.Labels)) {
			continue
		}
		le, err := strconv.ParseFloat(s.Labels["le"], 64)
		if err != nil {
			continue
		}
		byBound[le] += s.Value
	}
	h := Histogram{}
	for b := range byBound {
		if !math.IsInf(b, 1) {
			h.Bounds = append(h.Bounds, b)
		}
	}
	slices.Sort(h.Bounds)
	for _, b := range h.Bounds {
		h.Counts = append(h.Counts, byBound[b])
	}
	h.Total = byBound[math.Inf(1)]
	return h
}

// Minus is the histogram of the observations made between an earlier
// scrape (before) and this one.
func (h Histogram) Minus(before Histogram) Histogram {
	out := Histogram{Bounds: h.Bounds, Counts: slices.Clone(h.Counts), Total: h.Total - before.Total}
	for i, b := range h.Bounds {
		if j := slices.Index(before.Bounds, b); j >= 0 {
			out.Counts[i] -= before.Counts[j]
		}
	}
	return out
}

// Quantile estimates the q-th quantile (0..1) as Prometheus'
// histogram_quantile does: linear interpolation inside the bucket that
// holds the rank. A rank beyond the last finite bound returns that bound.
// The estimate is only as good as the buckets; FractionWithin gives exact
// counts at the bounds.
func (h Histogram) Quantile(q float64) float64 {
	if h.Total <= 0 || len(h.Bounds) == 0 {
		return 0
	}
	rank := q * h.Total
	lower, below := 0.0, 0.0
	for i, b := range h.Bounds {
		if h.Counts[i] >= rank {
			inBucket := h.Counts[i] - below
			if inBucket <= 0 {
				return b
			}
			return lower + (b-lower)*(rank-below)/inBucket
		}
		lower, below = b, h.Counts[i]
	}
	return h.Bounds[len(h.Bounds)-1]
}

// FractionWithin is the exact share of observations at most bound, which
// must be one of the bucket bounds (else 0). Bounds made by multiplying
// (Prometheus' ExponentialBuckets) are off in the last digits, so a bound
// within a billionth counts as equal.
func (h Histogram) FractionWithin(bound float64) float64 {
	i := slices.IndexFunc(h.Bounds, func(b float64) bool { return math.Abs(b-bound) <= 1e-9*bound })
	if i < 0 || h.Total <= 0 {
		return 0
	}
	return h.Counts[i] / h.Total
}

package bench

import (
	"bufio"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Sample is one line of the Prometheus text exposition format.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Metrics are the samples of one scrape. The bench reads only a handful of
// series, so a small parser of the text format keeps go.mod free of a direct
// Prometheus dependency.
type Metrics []Sample

// ParseMetrics parses the Prometheus text format: comments and blank lines
// are skipped, label values may hold escaped quotes, commas and braces, and
// a trailing timestamp is ignored.
func ParseMetrics(text string) (Metrics, error) {
	var out Metrics
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d: %w", n, err)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

func parseSample(line string) (Sample, error) {
	s := Sample{Labels: map[string]string{}}
	end := strings.IndexAny(line, "{ \t")
	if end <= 0 {
		return s, fmt.Errorf("no value in %q", line)
	}
	s.Name, line = line[:end], line[end:]
	if strings.HasPrefix(line, "{") {
		rest, err := parseLabels(line[1:], s.Labels)
		if err != nil {
			return s, err
		}
		line = rest
	}
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return s, fmt.Errorf("no value for %s", s.Name)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, fmt.Errorf("value of %s: %w", s.Name, err)
	}
	s.Value = v
	return s, nil
}

// parseLabels reads `k="v",...}` into into and returns what follows the
// closing brace.
func parseLabels(in string, into map[string]string) (string, error) {
	for {
		in = strings.TrimLeft(in, " ,")
		if strings.HasPrefix(in, "}") {
			return in[1:], nil
		}
		eq := strings.Index(in, "=")
		if eq <= 0 || len(in) < eq+2 || in[eq+1] != '"' {
			return "", fmt.Errorf("bad label in %q", in)
		}
		key := strings.TrimSpace(in[:eq])
		var val strings.Builder
		i := eq + 2
		for ; i < len(in) && in[i] != '"'; i++ {
			if in[i] == '\\' && i+1 < len(in) {
				i++
				switch in[i] {
				case 'n':
					val.WriteByte('\n')
				default:
					val.WriteByte(in[i])
				}
				continue
			}
			val.WriteByte(in[i])
		}
		if i >= len(in) {
			return "", fmt.Errorf("unterminated value of label %s", key)
		}
		into[key] = val.String()
		in = in[i+1:]
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

package bench

import (
	"math"
	"slices"
	"time"
)

// Percentile returns the p-th percentile (0 < p <= 100) of xs by the
// nearest-rank method: the smallest value with at least p% of the values at
// or below it. It returns 0 for no values. Nearest rank never invents a value
// that was not measured, which matters for p99 of a few hundred samples.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = max(1, min(rank, len(s)))
	return s[rank-1]
}

// Spread is the median, minimum and maximum of repeated measurements.
type Spread struct {
	Median, Min, Max float64
	// N is how many measurements there were.
	N int
}

// SpreadOf summarizes repeated runs; the median of an even count is the
// mean of the two middle values.
func SpreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	mid := len(s) / 2
	med := s[mid]
	if len(s)%2 == 0 {
		med = (s[mid-1] + s[mid]) / 2
	}
	return Spread{Median: med, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// seconds turns durations into float seconds for the percentile helpers.
func seconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

package bench

import "testing"

func TestPercentile(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(100 - i) // unsorted on purpose
	}
	for _, tc := range []struct {
		name string
		xs   []float64
		p    float64
		want float64
	}{
		{"empty", nil, 50, 0},
		{"one value", []float64{7}, 99, 7},
		{"median of odd", []float64{3, 1, 2}, 50, 2},
		{"median of even takes the lower rank", []float64{4, 1, 3, 2}, 50, 2},
		{"p50 of 1..100", hundred, 50, 50},
		{"p99 of 1..100", hundred, 99, 99},
		{"p100 is the max", hundred, 100, 100},
		{"tiny p is the min", hundred, 0.1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Percentile(tc.xs, tc.p); got != tc.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tc.xs, tc.p, got, tc.want)
			}
		})
	}
}

func TestSpreadOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		want Spread
	}{
		{"none", nil, Spread{}},
		{"three runs", []float64{5, 1, 3}, Spread{Median: 3, Min: 1, Max: 5, N: 3}},
		{"even count averages the middle", []float64{4, 1, 2, 10}, Spread{Median: 3, Min: 1, Max: 10, N: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SpreadOf(tc.xs); got != tc.want {
				t.Errorf("SpreadOf(%v) = %+v, want %+v", tc.xs, got, tc.want)
			}
		})
	}
}

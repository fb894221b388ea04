package bench

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestMeasuresAreReportsRows: Measures and HeapSlopeKiB give the figures
// Report prints, so a document quoting them says what bin/bench -report
// says; the webhooks' p99 is the difference of the medians.
func TestMeasuresAreReportsRows(t *testing.T) {
	rec := func(heapMiB, hooks, none float64) Record {
		r := Record{N: 1000, R: 1, Restart: RestartResult{Reconciles: 1000}}
		r.MemoryN.HeapInuse = heapMiB * (1 << 20)
		r.Tail.Hooks.P99, r.Tail.NoHooks.P99 = hooks/1e3, none/1e3
		return r
	}
	lo := []Record{rec(20, 9, 5), rec(21, 10, 4), rec(22, 50, 3)}
	hi := make([]Record, len(lo))
	for i, r := range lo {
		r.N = 5000
		r.MemoryN.HeapInuse += 4000 * 2.5 * 1024
		hi[i] = r
	}
	var diff *Measure
	for _, m := range Measures(lo) {
		if m.Name == TailDiffMeasure {
			diff = &m
		}
	}
	if diff == nil {
		t.Fatalf("no row %q", TailDiffMeasure)
	}
	// Medians 10 and 4; the per-run differences are 4, 6 and 47.
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if !near(diff.Spread.Median, 6) || !near(diff.Spread.Min, 4) || !near(diff.Spread.Max, 47) || diff.Met {
		t.Errorf("webhooks add %+v, met %v; want the median 10 - 4 = 6 (4 - 47), missed", diff.Spread, diff.Met)
	}
	var out bytes.Buffer
	Report(&out, append(lo, hi...))
	slope := HeapSlopeKiB(lo, hi)
	if want := fmt.Sprintf("N=1000 to N=5000: %s KiB", Format(slope)); !strings.Contains(out.String(), want) {
		t.Errorf("Report does not say %q:\n%s", want, out.String())
	}
}

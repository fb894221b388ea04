package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

// This file reads the results files back, for the programs that quote them
// (hack/benchdoc renders docs/BENCHMARKS.md from them, and make verify
// checks the figures other documents quote): the same measures Report
// prints, so that a document and bin/bench -report cannot disagree.

// Machine is what a run was made on, as bin/bench records it.
type Machine struct {
	Nproc                      int
	MemTotal, Kernel, CPU      string
	GoVersion                  string
	KubeAPIServer, Etcd        string
	ManagerGo, KubeAPIServerGo string
	CoreSHA256MBps             float64
}

// Made is where a record of -shards, -shard-kill, -shard-scale or -outage
// was made; the lines of a full run (make bench, make bench-full) carry it
// beside their Record's fields too, those written before it did not.
type Made struct {
	Command, Commit, ManagerVersion string
	Machine                         Machine
}

// ShardRecord is one line of -shards' results file.
type ShardRecord struct {
	ShardRun
	Made
}

// ShardFaultRecord is one line of -shard-kill's and -shard-scale's results
// file: one of Kill and Scale is set.
type ShardFaultRecord struct {
	Kill  *ShardKill
	Scale *ShardScale
	Made
}

// OutageRecord is one line of -outage's results file.
type OutageRecord struct {
	Date string
	N    int
	Made
	OutageRun
}

// ReadJSONLines reads a results file of one JSON value a line.
func ReadJSONLines[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for line := 1; sc.Scan(); line++ {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

// Measure is one row of Report's table for the runs of one N: its values
// per run, and the figure Report shows and judges (Spread.Median: for the
// webhooks' p99 the difference of the medians, not the median of the
// differences).
type Measure struct {
	Name, Unit string
	Values     []float64
	Spread     Spread
	// Target is the goal as Report writes it ("<= 1.10"), empty for none;
	// Met says whether Spread.Median reaches it.
	Target string
	Met    bool
}

// TailDiffMeasure names the measure of what the admission webhooks add at
// p99.
const TailDiffMeasure = tailDiffRow

// Measures are the rows of Report's table for recs, all of one N.
func Measures(recs []Record) []Measure {
	var out []Measure
	for _, r := range rowsFor(recs) {
		m := Measure{Name: r.name, Unit: r.unit, Values: r.values, Spread: SpreadOf(r.values)}
		if r.center != nil {
			m.Spread.Median = *r.center
		}
		if r.target != nil {
			m.Target, m.Met = r.target.Text, m.Spread.Median <= r.target.Max
		}
		out = append(out, m)
	}
	return out
}

// HeapSlopeKiB is the manager's heap per Drink between the runs of two
// sizes, from their median heaps, as Report's slope line gives it.
func HeapSlopeKiB(lo, hi []Record) float64 {
	heap := func(recs []Record) float64 {
		xs := make([]float64, len(recs))
		for i, r := range recs {
			xs[i] = r.MemoryN.HeapInuse
		}
		return SpreadOf(xs).Median
	}
	return (heap(hi) - heap(lo)) / float64(hi[0].N-lo[0].N) / 1024
}

// Format writes a figure as Report's tables do: three significant digits,
// or the integer above 100.
func Format(v float64) string { return format(v) }

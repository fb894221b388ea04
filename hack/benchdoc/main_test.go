package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/example/myoperator/hack/benchdoc/benchfig"
	"github.com/example/myoperator/test/bench"
)

func results() *benchfig.Results {
	rec := func(date string, n int, heapMiB float64) bench.Record {
		r := bench.Record{Date: date, N: n, R: 1.0596, Restart: bench.RestartResult{Reconciles: float64(n)}}
		r.MemoryN.HeapInuse = heapMiB * (1 << 20)
		r.Tail.Hooks.P99, r.Tail.NoHooks.P99 = 0.0102, 0.0039
		return r
	}
	return &benchfig.Results{Dir: "results", Runs: map[string][]bench.Record{
		"scale.jsonl": {rec("2026-12-01T00:00:00Z", 50000, 140.68), rec("2026-12-01T01:00:00Z", 10000, 46.68)},
	}}
}

// TestRender: every figure is read from its record and marked with its
// name; a template that names a record, figure or plot that is not there
// fails the rendering and names it.
func TestRender(t *testing.T) {
	for _, tc := range []struct{ tmpl, want, err string }{
		{`{{ fig "run.n50000.heapMiB" }} MiB`, "141<!-- fig bench:run.n50000.heapMiB --> MiB", ""},
		{`{{ figd "run.n50000.R" 1 }}`, "1.1<!-- fig bench:run.n50000.R -->", ""},
		{`{{ fig "run.n50000.tailAddMs" }} ms: {{ verdict (value "run.n50000.tailAddMs") 5 }}`, "6.30<!-- fig bench:run.n50000.tailAddMs --> ms: **missed**", ""},
		{`{{ fig "run.n10000to50000.heapSlopeKiB" }}`, "2.41<!-- fig bench:run.n10000to50000.heapSlopeKiB -->", ""},
		{`{{ with runs 50000 }}{{ made .Source }}{{ end }}`, "the record names no commit, command or machine (make bench-full's records hold none; the notes of the run in test/bench/results/HISTORY.md do)", ""},
		{`{{ fig "run.n200000.heapMiB" }}`, "", "no run at N = 200000 in results"},
		{`{{ fig "shards.n50000r1.heapMiB" }}`, "", "no -shards run n50000r1 in results/shards.jsonl"},
		{`{{ fig "kill.n50000.keptP99S" }}`, "", "no -shard-kill run at N = 50000"},
		{`{{ plot "heap.svg" }}`, "bench/heap.svg", ""},
		{`{{ plot "cpu.svg" }}`, "", `no plot "cpu.svg" is drawn`},
	} {
		out, err := render(tc.tmpl, results(), "t.tmpl", []string{"heap.svg"})
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one with %q", tc.tmpl, err, tc.err)
		case tc.err == "" && (err != nil || !strings.HasSuffix(string(out), tc.want)):
			t.Errorf("%s: %q, %v; want it to end with %q", tc.tmpl, out, err, tc.want)
		}
	}
}

// TestPlotsAreTheSameBytes: drawn twice from the same records, every plot
// is byte for byte the same, and holds no date or embedded font, or make
// verify would fail on a tree that did not change.
func TestPlotsAreTheSameBytes(t *testing.T) {
	r, err := benchfig.Load("../../test/bench/results")
	if err != nil {
		t.Fatal(err)
	}
	first, err := plots(r)
	if err != nil {
		t.Fatal(err)
	}
	second, err := plots(r)
	if err != nil {
		t.Fatal(err)
	}
	for name, svg := range first {
		if !bytes.Equal(svg, second[name]) {
			t.Errorf("%s differs between two drawings", name)
		}
		for _, bad := range []string{"@font-face", "2026-", "base64"} {
			if bytes.Contains(svg, []byte(bad)) {
				t.Errorf("%s holds %q", name, bad)
			}
		}
	}
}

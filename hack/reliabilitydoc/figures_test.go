package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/example/myoperator/hack/benchdoc/benchfig"
	"github.com/example/myoperator/test/bench"
	"github.com/example/myoperator/test/reliability"
)

// TestCheckFigures: a marked figure equal to its test's newest run passes;
// one that differs, quotes a run or figure nobody saved, has no number, or
// a marker that is misspelt is reported with the file, line and both values.
func TestCheckFigures(t *testing.T) {
	recs := map[string][]reliability.Record{
		"TestHeap": {
			{Test: "TestHeap", Commit: "aaaaaaa111", Date: "2026-12-01T00:00:00Z", Figures: map[string]any{"growthMiB": 6.1}},
			{Test: "TestHeap", Commit: "0123456789", Date: "2026-12-02T00:00:00Z", Figures: map[string]any{"growthMiB": 5.6, "objects": 20000.0}},
		},
	}
	for _, tc := range []struct {
		name, doc string
		matched   int
		problems  []string
	}{
		{name: "equal", doc: "grew by 5.6<!-- fig TestHeap.growthMiB --> MiB, 20,000<!-- fig TestHeap.objects --> objects", matched: 2},
		{name: "unmarked figures are not read", doc: "grew by 6.1 MiB", matched: 0},
		{
			name: "an older run's figure", doc: "intro\ngrew by 6.1<!-- fig TestHeap.growthMiB --> MiB",
			problems: []string{"d.md:2: says 6.1 where TestHeap's growthMiB is 5.6 (its newest run, `0123456`, 2026-12-02, in results/TestHeap.jsonl)"},
		},
		{
			name: "thousands written otherwise", doc: "20000<!-- fig TestHeap.objects -->",
			problems: []string{"d.md:1: says 20000 where TestHeap's objects is 20,000"},
		},
		{name: "no such test", doc: "1<!-- fig TestGone.x -->", problems: []string{"d.md:1: 1 quotes TestGone, which has no results in results"}},
		{name: "no such figure", doc: "1<!-- fig TestHeap.rss -->", problems: []string{`d.md:1: 1 quotes TestHeap's figure "rss", which its newest run`}},
		{name: "no number", doc: "about <!-- fig TestHeap.growthMiB -->", problems: []string{"d.md:1: no number right before the marker of TestHeap.growthMiB"}},
		{name: "misspelt marker", doc: "5.6 <!--fig TestHeap growthMiB-->", problems: []string{`d.md:1: "<!--fig TestHeap growthMiB-->" is not a figure marker`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems, matched := checkFigures(map[string]string{"d.md": tc.doc}, recs, "results", nil)
			wantProblems(t, problems, matched, tc.problems, tc.matched)
		})
	}
}

// TestCheckBenchFigures: a figure quoted from test/bench's records passes
// when it is the record's value rounded to its own decimals; one that
// differs is reported with the file, the line, both values and the record.
func TestCheckBenchFigures(t *testing.T) {
	src := benchfig.Source{File: "test/bench/results/shards.jsonl", First: "2026-12-03T06:42:13Z", Last: "2026-12-03T06:42:13Z", Runs: 1, Made: bench.Made{Commit: "b42b9cb5b6ed98e8f85ba36c239762d0c8d59cc8"}}
	figs := map[string]float64{"shards.n200000r1.heapMiB": 526.8047, "shards.n200000r2.heapMiB.min": 288.4922, "shards.n200000r1.convergedS": 2089.5627}
	get := func(name string) (benchfig.Figure, error) {
		v, ok := figs[name]
		if !ok {
			return benchfig.Figure{}, fmt.Errorf("%s: no -shards run n200000r9 in test/bench/results/shards.jsonl", name)
		}
		return benchfig.Figure{Name: name, Value: v, Source: src}, nil
	}
	for _, tc := range []struct {
		name, doc string
		matched   int
		problems  []string
	}{
		{name: "rounded to the quote's decimals", doc: "527<!-- fig bench:shards.n200000r1.heapMiB --> or 526.8<!-- fig bench:shards.n200000r1.heapMiB --> MiB in 2,090<!-- fig bench:shards.n200000r1.convergedS --> s", matched: 3},
		{
			name: "a figure that differs", doc: "| 2 |\n| 289<!-- fig bench:shards.n200000r2.heapMiB.min --> to 298 MiB |",
			problems: []string{"d.md:2: says 289 where bench:shards.n200000r2.heapMiB.min is 288 (test/bench/results/shards.jsonl, 2026-12-03, `b42b9cb`)"},
		},
		{name: "thousands not separated", doc: "2090<!-- fig bench:shards.n200000r1.convergedS -->", problems: []string{"d.md:1: says 2090 where bench:shards.n200000r1.convergedS is 2,090"}},
		{name: "no such run", doc: "1<!-- fig bench:shards.n200000r9.heapMiB -->", problems: []string{"d.md:1: 1 quotes bench:shards.n200000r9.heapMiB: no -shards run n200000r9"}},
		{name: "no number", doc: "about <!-- fig bench:shards.n200000r1.heapMiB -->", problems: []string{"d.md:1: no number right before the marker of bench:shards.n200000r1.heapMiB"}},
		{name: "misspelt", doc: "527<!-- fig bench shards.n200000r1.heapMiB -->", problems: []string{`d.md:1: "<!-- fig bench shards.n200000r1.heapMiB -->" is not a figure marker`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems, matched := checkFigures(map[string]string{"d.md": tc.doc}, nil, "results", get)
			wantProblems(t, problems, matched, tc.problems, tc.matched)
		})
	}
}

// wantProblems fails t unless checkFigures matched as many figures as want
// and reported one problem per line of problems, each starting as given.
func wantProblems(t *testing.T, problems []string, matched int, want []string, wantMatched int) {
	t.Helper()
	if matched != wantMatched {
		t.Errorf("matched %d, want %d", matched, wantMatched)
	}
	if len(problems) != len(want) {
		t.Fatalf("problems %q, want %d like %q", problems, len(want), want)
	}
	for i, w := range want {
		if !strings.HasPrefix(problems[i], w) {
			t.Errorf("problem %q, want it to start %q", problems[i], w)
		}
	}
}

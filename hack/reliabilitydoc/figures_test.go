package main

import (
	"strings"
	"testing"

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
			problems, matched := checkFigures(map[string]string{"d.md": tc.doc}, recs, "results")
			if matched != tc.matched {
				t.Errorf("matched %d, want %d", matched, tc.matched)
			}
			if len(problems) != len(tc.problems) {
				t.Fatalf("problems %q, want %d like %q", problems, len(tc.problems), tc.problems)
			}
			for i, want := range tc.problems {
				if !strings.HasPrefix(problems[i], want) {
					t.Errorf("problem %q, want it to start %q", problems[i], want)
				}
			}
		})
	}
}

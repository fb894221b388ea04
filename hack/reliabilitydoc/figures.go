package main

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/example/myoperator/hack/benchdoc/benchfig"
	"github.com/example/myoperator/test/reliability"
)

// figureMarker is a figure quoted in a hand-written document, followed by
// the results figure it quotes, as an HTML comment a reader of the
// rendered page does not see:
//
//	grew the heap by 5.6<!-- fig TestTenantCannotFillCache.heapGrowthMiB --> MiB
//
// The number must be written as the rendered docs/RELIABILITY.md writes it
// (number: thousands separators, one decimal).
var figureMarker = regexp.MustCompile(`([0-9][0-9,]*(?:\.[0-9]+)?)?<!-- fig ([A-Za-z0-9_]*)\.([A-Za-z0-9_]*) -->`)

// benchMarker is a figure quoted from test/bench's results files, named
// as package benchfig names them (hack/benchdoc/benchfig/doc.go):
//
//	the slope was 2.41<!-- fig bench:run.n10000to50000.heapSlopeKiB --> KiB
//	four 149<!-- fig bench:shards.n200000r4.heapMiB.min --> to 158<!-- fig bench:shards.n200000r4.heapMiB.max --> MiB
//	its range was Ready 53.7<!-- fig bench:kill.n200000@8bee52c.recoverS --> s after the kill
//
// A bench figure is written as precisely as the writer chooses: it must
// equal the record's value rounded to as many decimals as it has, with
// thousands separators (527 and 526.8 both quote 526.8047 MiB; 526 and
// 527.0 do not). hack/benchdoc writes the same markers into
// docs/BENCHMARKS.md.
var benchMarker = regexp.MustCompile(`([0-9][0-9,]*(?:\.[0-9]+)?)?<!-- fig bench:([A-Za-z0-9_.@-]*) -->`)

// benchFigure reads a named bench figure; nil when no bench results were
// loaded.
type benchFigure func(name string) (benchfig.Figure, error)

// anyMarker finds markers figureMarker would miss for their spelling.
var anyMarker = regexp.MustCompile(`<!--\s*fig\b[^>]*-->`)

// checkFigures reads each marked figure of the documents and compares it
// with the newest run of its test. It returns one problem per figure that
// differs, names no saved run or figure, or has no number before it, and
// how many figures matched.
func checkFigures(docs map[string]string, recs map[string][]reliability.Record, resultsDir string, bench benchFigure) (problems []string, matched int) {
	for _, path := range slices.Sorted(maps.Keys(docs)) {
		text := docs[path]
		marked := map[int]bool{}
		for _, m := range benchMarker.FindAllStringSubmatchIndex(text, -1) {
			marked[m[4]-len("<!-- fig bench:")] = true
			line := 1 + strings.Count(text[:m[0]], "\n")
			where := fmt.Sprintf("%s:%d", path, line)
			quoted, name := "", text[m[4]:m[5]]
			if m[2] >= 0 {
				quoted = text[m[2]:m[3]]
			}
			if quoted == "" {
				problems = append(problems, fmt.Sprintf("%s: no number right before the marker of bench:%s", where, name))
				continue
			}
			if bench == nil {
				problems = append(problems, fmt.Sprintf("%s: %s quotes bench:%s, and no bench results were loaded", where, quoted, name))
				continue
			}
			f, err := bench(name)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %s quotes bench:%v", where, quoted, err))
				continue
			}
			if want := benchfig.Quote(quoted, f.Value); quoted != want {
				problems = append(problems, fmt.Sprintf("%s: says %s where bench:%s is %s (%s)", where, quoted, name, want, f.Source))
				continue
			}
			matched++
		}
		for _, m := range figureMarker.FindAllStringSubmatchIndex(text, -1) {
			marked[m[4]-len("<!-- fig ")] = true
			line := 1 + strings.Count(text[:m[0]], "\n")
			where := fmt.Sprintf("%s:%d", path, line)
			quoted, test, name := "", text[m[4]:m[5]], text[m[6]:m[7]]
			if m[2] >= 0 {
				quoted = text[m[2]:m[3]]
			}
			if quoted == "" {
				problems = append(problems, fmt.Sprintf("%s: no number right before the marker of %s.%s", where, test, name))
				continue
			}
			runs := recs[test]
			if len(runs) == 0 {
				problems = append(problems, fmt.Sprintf("%s: %s quotes %s, which has no results in %s", where, quoted, test, resultsDir))
				continue
			}
			last := runs[len(runs)-1]
			v, ok := last.Figures[name]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: %s quotes %s's figure %q, which its newest run (%s) did not save", where, quoted, test, name, at(last)))
				continue
			}
			want, err := number(v)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %s's figure %q: %v", where, test, name, err))
				continue
			}
			if quoted != want {
				problems = append(problems, fmt.Sprintf("%s: says %s where %s's %s is %s (its newest run, %s, in %s/%s.jsonl)",
					where, quoted, test, name, want, at(last), resultsDir, test))
				continue
			}
			matched++
		}
		for _, m := range anyMarker.FindAllStringIndex(text, -1) {
			if !marked[m[0]] {
				line := 1 + strings.Count(text[:m[0]], "\n")
				problems = append(problems, fmt.Sprintf("%s:%d: %q is not a figure marker (<!-- fig TestName.figure --> or <!-- fig bench:kind.selector.field -->)", path, line, text[m[0]:m[1]]))
			}
		}
	}
	return problems, matched
}

// checkFigureFiles runs checkFigures on the named files, against the
// reliability results of resultsDir and the bench results of benchDir.
func checkFigureFiles(paths []string, resultsDir, benchDir string) error {
	recs, err := reliability.Load(resultsDir)
	if err != nil {
		return err
	}
	benchRecs, err := benchfig.Load(benchDir)
	if err != nil {
		return err
	}
	docs := map[string]string{}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		docs[p] = string(raw)
	}
	problems, matched := checkFigures(docs, recs, resultsDir, benchRecs.Get)
	if len(problems) > 0 {
		return fmt.Errorf("figures that differ from their results files:\n  %s", strings.Join(problems, "\n  "))
	}
	fmt.Printf("reliabilitydoc: %d marked figures in %s match their results files\n", matched, strings.Join(paths, ", "))
	return nil
}

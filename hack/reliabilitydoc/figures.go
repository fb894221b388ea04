package main

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

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

// anyMarker finds markers figureMarker would miss for their spelling.
var anyMarker = regexp.MustCompile(`<!--\s*fig\b[^>]*-->`)

// checkFigures reads each marked figure of the documents and compares it
// with the newest run of its test. It returns one problem per figure that
// differs, names no saved run or figure, or has no number before it, and
// how many figures matched.
func checkFigures(docs map[string]string, recs map[string][]reliability.Record, resultsDir string) (problems []string, matched int) {
	for _, path := range slices.Sorted(maps.Keys(docs)) {
		text := docs[path]
		marked := map[int]bool{}
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
				problems = append(problems, fmt.Sprintf("%s:%d: %q is not a figure marker (<!-- fig TestName.figure -->)", path, line, text[m[0]:m[1]]))
			}
		}
	}
	return problems, matched
}

// checkFigureFiles runs checkFigures on the named files.
func checkFigureFiles(paths []string, resultsDir string) error {
	recs, err := reliability.Load(resultsDir)
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
	problems, matched := checkFigures(docs, recs, resultsDir)
	if len(problems) > 0 {
		return fmt.Errorf("figures that differ from their results files:\n  %s", strings.Join(problems, "\n  "))
	}
	fmt.Printf("reliabilitydoc: %d marked figures in %s match their results files\n", matched, strings.Join(paths, ", "))
	return nil
}

// Command reliabilitydoc renders docs/RELIABILITY.md from
// test/reliability/RELIABILITY.md.tmpl and the results files of
// test/reliability/results: every figure of the document is read from the
// newest run of the test that produced it, and each row says the commit and
// date it was measured at. make verify runs it; a document edited by hand
// differs from its rendering, and verify fails.
//
// A template that reads a test with no results file fails the rendering and
// names the test, so a row cannot quote a run nobody saved.
//
// With -figures it checks hand-written documents instead: each figure
// marked with the results figure it quotes (figures.go) must equal the
// newest run's, of a reliability test or of test/bench's results
// (hack/benchdoc/benchfig). make verify runs that on the documents that
// quote results.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/example/myoperator/test/reliability"
)

func main() {
	tmpl := flag.String("template", "test/reliability/RELIABILITY.md.tmpl", "the document's template")
	results := flag.String("results", "test/reliability/results", "the folder of results files")
	out := flag.String("out", "docs/RELIABILITY.md", "the document to write")
	figures := flag.String("figures", "", "check, rather than render: the marked figures of these documents (space-separated) against the results files")
	benchResults := flag.String("bench-results", "test/bench/results", "with -figures: the folder of test/bench's results files, which <!-- fig bench:... --> markers quote")
	flag.Parse()
	if *figures != "" {
		if err := checkFigureFiles(strings.Fields(*figures), *results, *benchResults); err != nil {
			fmt.Fprintln(os.Stderr, "reliabilitydoc:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*tmpl, *results, *out); err != nil {
		fmt.Fprintln(os.Stderr, "reliabilitydoc:", err)
		os.Exit(1)
	}
}

func run(tmplPath, resultsDir, out string) error {
	recs, err := reliability.Load(resultsDir)
	if err != nil {
		return err
	}
	text, err := os.ReadFile(tmplPath)
	if err != nil {
		return err
	}
	doc, err := render(string(text), recs, tmplPath, resultsDir)
	if err != nil {
		return err
	}
	return os.WriteFile(out, doc, 0o644)
}

// render executes the template over the records.
func render(text string, recs map[string][]reliability.Record, tmplPath, resultsDir string) ([]byte, error) {
	funcs := template.FuncMap{
		// last is the newest run of a test.
		"last": func(test string) (reliability.Record, error) {
			rs := recs[test]
			if len(rs) == 0 {
				return reliability.Record{}, fmt.Errorf("no results for %s in %s: run it with %s set (make reliability)", test, resultsDir, reliability.Env)
			}
			return rs[len(rs)-1], nil
		},
		// runs is every run of a test, oldest first.
		"runs": func(test string) []reliability.Record { return recs[test] },
		"n":    number,
		"dur":  duration,
		"at":   at,
		// fig is one figure of a record; a missing one fails the rendering.
		"fig": func(r reliability.Record, name string) (any, error) {
			v, ok := r.Figures[name]
			if !ok {
				return nil, fmt.Errorf("%s (%s) has no figure %q", r.Test, r.Date, name)
			}
			return v, nil
		},
	}
	t, err := template.New(tmplPath).Funcs(funcs).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "<!-- Rendered by hack/reliabilitydoc from %s and %s (make reliability-doc); edit those, not this file. -->\n\n", tmplPath, resultsDir)
	if err := t.Execute(&b, nil); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// number formats a figure: integers with thousands separators, other
// numbers with one decimal.
func number(v any) (string, error) {
	f, ok := v.(float64)
	if !ok {
		if i, isInt := v.(int); isInt {
			f = float64(i)
		} else {
			return "", fmt.Errorf("not a number: %v", v)
		}
	}
	if f != math.Trunc(f) {
		return strconv.FormatFloat(f, 'f', 1, 64), nil
	}
	s := strconv.FormatInt(int64(math.Abs(f)), 10)
	var parts []string
	for len(s) > 3 {
		parts = append([]string{s[len(s)-3:]}, parts...)
		s = s[:len(s)-3]
	}
	parts = append([]string{s}, parts...)
	sign := ""
	if f < 0 {
		sign = "-"
	}
	return sign + strings.Join(parts, ","), nil
}

// duration formats seconds as "56.9 s" or "13 min 43 s".
func duration(v any) (string, error) {
	f, ok := v.(float64)
	if !ok {
		return "", fmt.Errorf("not a number of seconds: %v", v)
	}
	if f < 60 {
		return strconv.FormatFloat(f, 'f', 1, 64) + " s", nil
	}
	d := time.Duration(f * float64(time.Second)).Round(time.Second)
	return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60), nil
}

// at dates a row: the commit (short) and the day it was measured.
func at(r reliability.Record) string {
	short := r.Commit
	if len(short) > 7 {
		short = short[:7]
	}
	return fmt.Sprintf("`%s`, %s", short, strings.SplitN(r.Date, "T", 2)[0])
}

package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/example/myoperator/hack/benchdoc/benchfig"
	"github.com/example/myoperator/test/bench"
)

func main() {
	tmpl := flag.String("template", "test/bench/BENCHMARKS.md.tmpl", "the document's template")
	results := flag.String("results", "test/bench/results", "the folder of results files")
	out := flag.String("out", "docs/BENCHMARKS.md", "the document to write")
	plotDir := flag.String("plots", "docs/bench", "the folder of the plots, which the document links as bench/<name>")
	flag.Parse()
	if err := run(*tmpl, *results, *out, *plotDir); err != nil {
		fmt.Fprintln(os.Stderr, "benchdoc:", err)
		os.Exit(1)
	}
}

func run(tmplPath, resultsDir, out, plotDir string) error {
	r, err := benchfig.Load(resultsDir)
	if err != nil {
		return err
	}
	svgs, err := plots(r)
	if err != nil {
		return err
	}
	text, err := os.ReadFile(tmplPath)
	if err != nil {
		return err
	}
	doc, err := render(string(text), r, tmplPath, slices.Sorted(maps.Keys(svgs)))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(plotDir, 0o755); err != nil {
		return err
	}
	// A plot no longer drawn would stay behind, linked by nothing and
	// checked by nothing.
	old, err := filepath.Glob(filepath.Join(plotDir, "*.svg"))
	if err != nil {
		return err
	}
	for _, p := range old {
		if _, ok := svgs[filepath.Base(p)]; !ok {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(svgs)) {
		if err := os.WriteFile(filepath.Join(plotDir, name), svgs[name], 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(out, doc, 0o644)
}

// targetRow is one measure with a target, as the document's table writes
// it: the figure marked with its name where package benchfig names it.
type targetRow struct {
	Name, Figure, Min, Max, Target, Verdict string
}

// runSet is the newest set of make bench-full's runs at one N.
type runSet struct {
	Recs   []bench.Record
	Source benchfig.Source
}

// render executes the template over the records. plotNames are the plots
// drawn, which the template may link.
func render(text string, r *benchfig.Results, tmplPath string, plotNames []string) ([]byte, error) {
	get := func(name string) (benchfig.Figure, error) { return r.Get(name) }
	marked := func(name, s string) string { return s + "<!-- fig bench:" + name + " -->" }
	funcs := template.FuncMap{
		// fig is a figure as bin/bench -report writes it, marked with its
		// name so that make verify's figure check reads it too.
		"fig": func(name string) (string, error) {
			f, err := get(name)
			return marked(name, benchfig.Auto(f.Value)), err
		},
		// figd is a figure with d decimals, marked.
		"figd": func(name string, d int) (string, error) {
			f, err := get(name)
			return marked(name, benchfig.Fixed(f.Value, d)), err
		},
		// value is a figure's number, for the template to judge it.
		"value": func(name string) (float64, error) {
			f, err := get(name)
			return f.Value, err
		},
		"source": func(name string) (benchfig.Source, error) {
			f, err := get(name)
			return f.Source, err
		},
		// span is a per-replica figure as "least to most", or one figure
		// when they are written the same.
		"span": func(name string) (string, error) {
			lo, err := get(name + ".min")
			if err != nil {
				return "", err
			}
			hi, err := get(name + ".max")
			if err != nil {
				return "", err
			}
			if benchfig.Auto(lo.Value) == benchfig.Auto(hi.Value) {
				return marked(name+".max", benchfig.Auto(hi.Value)), nil
			}
			return marked(name+".min", benchfig.Auto(lo.Value)) + " to " + marked(name+".max", benchfig.Auto(hi.Value)), nil
		},
		// auto writes a number the template derived from figures; it is
		// not a record's, so it carries no marker.
		"auto":    benchfig.Auto,
		"mul":     func(a, b float64) float64 { return a * b },
		"float":   func(n int) float64 { return float64(n) },
		"ints":    func(ns ...int) []int { return ns },
		"div":     func(a, b float64) float64 { return a / b },
		"made":    made,
		"day":     benchfig.Day,
		"short":   benchfig.Short,
		"verdict": verdict,
		"runs": func(n int) (runSet, error) {
			recs, src, err := r.RunsAt(n)
			return runSet{recs, src}, err
		},
		"targets": func(n int) ([]targetRow, error) { return targets(r, n) },
		// shards are the newest -shards invocation's runs at n, with
		// their selector (n<N>r<replicas>[-gateoff...]@commit).
		"shards": func(n int) ([]shardRun, error) { return shardRuns(r, n) },
		"kill": func(n int) (faultRun, error) {
			k, src, err := r.Kill(n, "")
			return faultRun{Kill: k, Source: src, Sel: fmt.Sprintf("n%d@%s", n, shortCommit(src.Commit))}, err
		},
		"rescale": func(n int) (faultRun, error) {
			s, src, err := r.Scale(n, "")
			return faultRun{Scale: s, Source: src, Sel: fmt.Sprintf("n%d@%s", n, shortCommit(src.Commit))}, err
		},
		// plot is the document's link to a drawn plot; one not drawn
		// fails the rendering.
		"plot": func(name string) (string, error) {
			if !slices.Contains(plotNames, name) {
				return "", fmt.Errorf("no plot %q is drawn (%s)", name, strings.Join(plotNames, ", "))
			}
			return "bench/" + name, nil
		},
	}
	t, err := template.New(tmplPath).Funcs(funcs).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "<!-- Rendered by hack/benchdoc from %s and %s (make bench-doc); edit those, not this file. -->\n\n", tmplPath, r.Dir)
	if err := t.Execute(&b, nil); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// verdict judges a figure against the most it may be.
func verdict(v, most float64) string {
	if v <= most {
		return "met"
	}
	return "**missed**"
}

// made says where a record was made, or that it does not say.
func made(s benchfig.Source) string {
	if s.Commit == "" {
		return "the record names no commit, command or machine (make bench-full's records hold none; the notes of the run in test/bench/results/HISTORY.md do)"
	}
	m := s.Machine
	mem := m.MemTotal
	if kb, err := strconv.ParseFloat(strings.TrimSuffix(mem, " kB"), 64); err == nil {
		mem = strconv.FormatFloat(kb/(1<<20), 'f', 1, 64) + " GiB"
	}
	etcd := strings.TrimPrefix(m.Etcd, "etcd Version: ")
	return fmt.Sprintf("`%s` at commit `%s`, manager `%s`; %d CPUs (%s), %s, kernel %s, %s, kube-apiserver %s, etcd %s",
		s.Command, Short(s.Commit), s.ManagerVersion, m.Nproc, m.CPU, mem, m.Kernel, m.GoVersion, m.KubeAPIServer, etcd)
}

// Short is a commit as the document writes it.
func Short(c string) string { return benchfig.Short(c) }

// shortCommit is a commit as a selector names it: no "+dirty".
func shortCommit(c string) string {
	c, _ = strings.CutSuffix(benchfig.Short(c), "+dirty")
	return c
}

// targets are the measures with a target of the newest runs at n, as
// bin/bench -report judges them.
func targets(r *benchfig.Results, n int) ([]targetRow, error) {
	recs, _, err := r.RunsAt(n)
	if err != nil {
		return nil, err
	}
	keys := map[string]string{}
	for _, k := range benchfig.RunFieldNames() {
		keys[benchfig.RunMeasure(k)] = k
	}
	var rows []targetRow
	seen := map[string]bool{}
	for _, m := range bench.Measures(recs) {
		if m.Target == "" {
			seen[m.Name] = true
			continue
		}
		row := targetRow{Name: m.Name, Figure: benchfig.Auto(m.Spread.Median), Min: benchfig.Auto(m.Spread.Min), Max: benchfig.Auto(m.Spread.Max), Target: m.Target, Verdict: "met"}
		// Two rows may share a name; a figure's name reads the first.
		if k, ok := keys[m.Name]; ok && !seen[m.Name] {
			base := fmt.Sprintf("run.n%d.%s", n, k)
			row.Figure += "<!-- fig bench:" + base + " -->"
			if len(recs) > 1 {
				row.Min += "<!-- fig bench:" + base + ".min -->"
				row.Max += "<!-- fig bench:" + base + ".max -->"
			}
		}
		seen[m.Name] = true
		if !m.Met {
			row.Verdict = "**missed**"
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, errors.New("no measure with a target")
	}
	return rows, nil
}

// shardRun is a -shards run and the selector that names its figures.
type shardRun struct {
	bench.ShardRecord
	Sel    string
	Source benchfig.Source
}

func shardRuns(r *benchfig.Results, n int) ([]shardRun, error) {
	var newest bench.ShardRecord
	for _, s := range r.Shards {
		if s.N == n && s.Date > newest.Date {
			newest = s
		}
	}
	if newest.Date == "" {
		return nil, fmt.Errorf("no -shards run at N = %d in %s", n, r.Dir)
	}
	var out []shardRun
	for _, s := range r.Shards {
		if s.N != n || s.Commit != newest.Commit || s.Command != newest.Command {
			continue
		}
		sel := fmt.Sprintf("n%dr%d", n, s.Replicas)
		if !s.FeatureGate {
			sel += "-gateoff"
		}
		if s.FenceIdle {
			sel += "-fenceidle"
		}
		if s.DirectWebhooks {
			sel += "-direct"
		}
		switch {
		case slices.Equal(s.ManagerFlags, benchfig.HTTP2Flags):
			sel += "-http2"
		case len(s.ManagerFlags) > 0:
			// No selector names other flags: nothing cites such a run.
			continue
		}
		src := benchfig.Source{File: filepath.Join(r.Dir, benchfig.ShardsFile), First: s.Date, Last: s.Date, Runs: 1, Made: s.Made}
		out = append(out, shardRun{s, sel + "@" + shortCommit(s.Commit), src})
	}
	return out, nil
}

// faultRun is a -shard-kill or -shard-scale run and its selector.
type faultRun struct {
	Kill   bench.ShardKill
	Scale  bench.ShardScale
	Source benchfig.Source
	Sel    string
}

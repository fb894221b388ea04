package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	matrix := flag.String("matrix", "test/k8s-matrix/results.jsonl", "the recorded make test-k8s-matrix runs")
	versions := flag.String("versions", "", "the versions a matrix run must have passed, space-separated (KUBE_MATRIX_VERSIONS)")
	reliability := flag.String("reliability", "test/reliability/results", "the folder of the reliability suites' records")
	tests := flag.String("reliability-tests", "", "the reliability suites a release needs, as make reliability takes them: TestA|TestB (RELIABILITY_TESTS)")
	mutations := flag.String("mutations", "test/mutations", "the mutation patches and their results.txt")
	bench := flag.String("bench", "test/bench/results/quick.jsonl", "the recorded make bench runs")
	flag.Parse()
	want := strings.Fields(*versions)
	suites := strings.FieldsFunc(*tests, func(r rune) bool { return r == '|' || r == ' ' })
	if len(want) == 0 || len(suites) == 0 {
		fail("-versions and -reliability-tests must name at least one each")
	}
	changed := gitChanges()
	var missing []string
	need := func(what, command string, problems []string) {
		if len(problems) == 0 {
			return
		}
		missing = append(missing, fmt.Sprintf("%s (%s):\n  - %s", what, command, strings.Join(problems, "\n  - ")))
	}

	runs, err := readJSONLines[Run](*matrix)
	if err != nil && !os.IsNotExist(err) {
		fail("%v", err)
	}
	if run, why := Covering(runs, want, changed); run != nil {
		fmt.Printf("releasegate: the version matrix: HEAD's code passed %s at %s on %s (%s)\n", strings.Join(want, ", "), short(run.Commit), run.Date, run.Command)
	} else {
		need("the version matrix", "make test-k8s-matrix", []string{fmt.Sprintf("no make test-k8s-matrix run recorded in %s covers HEAD's code on %s: %s", *matrix, strings.Join(want, ", "), why)})
	}

	found, problems, err := ReliabilityCovering(*reliability, suites, changed)
	if err != nil {
		fail("%v", err)
	}
	if len(problems) == 0 {
		fmt.Printf("releasegate: the reliability suites: all %d recorded at HEAD's code (the newest on %s)\n", len(found), newestDate(found))
	}
	need("the reliability suites", "make reliability", problems)

	patches, err := filepath.Glob(filepath.Join(*mutations, "*.patch"))
	if err != nil {
		fail("%v", err)
	}
	names := make([]string, len(patches))
	for i, p := range patches {
		names[i] = strings.TrimSuffix(filepath.Base(p), ".patch")
	}
	results := filepath.Join(*mutations, "results.txt")
	text, err := os.ReadFile(results)
	switch {
	case os.IsNotExist(err):
		problems = []string{results + ": no full run is recorded"}
	case err != nil:
		fail("%v", err)
	default:
		run, err := ParseMutations(string(text))
		if err != nil {
			problems = []string{fmt.Sprintf("%s: %v", results, err)}
		} else {
			problems = MutationProblems(run, names, changed)
		}
		if len(problems) == 0 {
			fmt.Printf("releasegate: the mutation suite: all %d patches caught at HEAD's code (the full run at %s)\n", len(names), short(run.Commit))
		}
	}
	need("the mutation suite", "make test-mutations", problems)

	rec, why, err := BenchCovering(*bench, changed)
	if err != nil {
		fail("%v", err)
	}
	if rec != nil {
		fmt.Printf("releasegate: the quick benchmark: recorded at %s on %s (%s)\n", short(rec.Commit), rec.Date, rec.Command)
	} else {
		need("the quick benchmark", "make bench", []string{fmt.Sprintf("no make bench run recorded in %s covers HEAD's code: %s", *bench, why)})
	}

	if len(missing) > 0 {
		fail("HEAD's code lacks what a release needs; run these on a clean tree and commit their results:\n%s", strings.Join(missing, "\n"))
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "releasegate: "+format+"\n", args...)
	os.Exit(1)
}

func newestDate(recs []Reliability) string {
	newest := ""
	for _, r := range recs {
		newest = max(newest, r.Date)
	}
	return newest
}

// readJSONLines parses a JSON-lines file, skipping blank lines.
func readJSONLines[T any](file string) ([]T, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var recs []T
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for n := 1; s.Scan(); n++ {
		if strings.TrimSpace(s.Text()) == "" {
			continue
		}
		var r T
		if err := json.Unmarshal(s.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, n, err)
		}
		recs = append(recs, r)
	}
	return recs, s.Err()
}

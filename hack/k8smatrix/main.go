// Command k8smatrix tells whether HEAD's code has passed make
// test-k8s-matrix on every supported Kubernetes version, from the runs
// recorded in test/k8s-matrix/results.jsonl (hack/k8s-matrix.sh writes a
// line per run on a clean tree). make release runs it and refuses to cut a
// release when it exits non-zero.
//
// A run covers HEAD when it passed every version asked for and its commit
// differs from HEAD only in what does not change the code it tested:
// Markdown documents, the files make release itself writes (RELEASES.md,
// bundle/, bundle.Dockerfile, charts/, the image tag in
// config/manager/kustomization.yaml and the Makefile's IMG line) and the
// results file. So recording a run, writing its times into the docs and
// cutting a candidate and then its final release need no second run, and a
// change to anything else does.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
)

// Run is one line of the results file.
type Run struct {
	Date     string    `json:"date"`
	Commit   string    `json:"commit"`
	Tree     string    `json:"tree"`
	Command  string    `json:"command"`
	Seconds  int       `json:"seconds"`
	Versions []Version `json:"versions"`
}

// Version is one version's outcome in a run.
type Version struct {
	Kubernetes string `json:"kubernetes"`
	Result     string `json:"result"`
	Seconds    int    `json:"seconds"`
}

func main() {
	results := flag.String("results", "test/k8s-matrix/results.jsonl", "the recorded runs")
	versions := flag.String("versions", "", "the versions a run must have passed, space-separated (KUBE_MATRIX_VERSIONS)")
	flag.Parse()
	runs, err := read(*results)
	if err != nil {
		fail("%v", err)
	}
	want := strings.Fields(*versions)
	if len(want) == 0 {
		fail("-versions is empty")
	}
	run, why := Covering(runs, want, changedSince)
	if run == nil {
		fail("no make test-k8s-matrix run recorded in %s covers HEAD's code on %s: %s. Run make test-k8s-matrix on a clean tree and commit %s.",
			*results, strings.Join(want, ", "), why, *results)
	}
	fmt.Printf("k8smatrix: HEAD's code passed %s at %s on %s (%s)\n", strings.Join(want, ", "), run.Commit, run.Date, run.Command)
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "k8smatrix: "+format+"\n", args...)
	os.Exit(1)
}

// read parses the results file; a missing file is no runs.
func read(file string) ([]Run, error) {
	f, err := os.Open(file)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var runs []Run
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		if strings.TrimSpace(s.Text()) == "" {
			continue
		}
		var r Run
		if err := json.Unmarshal(s.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, n, err)
		}
		runs = append(runs, r)
	}
	return runs, s.Err()
}

// Covering returns the newest run that passed every version of want and
// whose commit's code is HEAD's, or nil and why none is. changed lists what
// differs between a commit and HEAD: the paths changed outside the
// Makefile, and the Makefile's changed lines.
func Covering(runs []Run, want []string, changed func(commit string) (paths, makefile []string, err error)) (*Run, string) {
	why := "none is recorded"
	for i := len(runs) - 1; i >= 0; i-- {
		r := &runs[i]
		if missing := notPassed(r, want); len(missing) > 0 {
			why = fmt.Sprintf("the newest that could have, %s, did not pass %s", short(r.Commit), strings.Join(missing, ", "))
			continue
		}
		paths, makefile, err := changed(r.Commit)
		if err != nil {
			why = fmt.Sprintf("%s: %v", short(r.Commit), err)
			continue
		}
		if code := codeChanges(paths, makefile); len(code) > 0 {
			why = fmt.Sprintf("the newest passing run, at %s, tested code that changed since: %s", short(r.Commit), strings.Join(code, ", "))
			if len(code) > 5 {
				why = fmt.Sprintf("the newest passing run, at %s, tested code that changed since: %s and %d more", short(r.Commit),
					strings.Join(code[:5], ", "), len(code)-5)
			}
			return nil, why
		}
		return r, ""
	}
	return nil, why
}

// notPassed lists the versions of want that r did not pass.
func notPassed(r *Run, want []string) []string {
	passed := map[string]bool{}
	for _, v := range r.Versions {
		passed[v.Kubernetes] = v.Result == "passed"
	}
	var missing []string
	for _, v := range want {
		if !passed[v] {
			missing = append(missing, v)
		}
	}
	return missing
}

// codeChanges keeps the changes that can change what the suites test.
func codeChanges(paths, makefile []string) []string {
	var code []string
	for _, p := range paths {
		switch {
		case path.Ext(p) == ".md",
			p == "bundle.Dockerfile",
			strings.HasPrefix(p, "bundle/"), strings.HasPrefix(p, "charts/"), strings.HasPrefix(p, "test/k8s-matrix/"):
		default:
			code = append(code, p)
		}
	}
	for _, line := range makefile {
		if !strings.HasPrefix(line[1:], "IMG ?= ") {
			code = append(code, "Makefile ("+line+")")
		}
	}
	return code
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// changedSince asks git what differs between commit and HEAD. The image
// tag of config/manager/kustomization.yaml is make release's; any other
// line of it is code, so the file is read line by line like the Makefile.
func changedSince(commit string) (paths, lines []string, err error) {
	if out, err := exec.Command("git", "cat-file", "-e", commit+"^{commit}").CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("commit not in this repository: %s", strings.TrimSpace(string(out)))
	}
	out, err := exec.Command("git", "diff", "--name-only", commit, "HEAD", "--", ".", ":(exclude)Makefile", ":(exclude)config/manager/kustomization.yaml").Output()
	if err != nil {
		return nil, nil, fmt.Errorf("git diff: %w", err)
	}
	paths = strings.Fields(string(out))
	for _, file := range []string{"Makefile", "config/manager/kustomization.yaml"} {
		out, err := exec.Command("git", "diff", "-U0", commit, "HEAD", "--", file).Output()
		if err != nil {
			return nil, nil, fmt.Errorf("git diff %s: %w", file, err)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if (strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-")) && !strings.HasPrefix(l, "+++") && !strings.HasPrefix(l, "---") {
				if file != "Makefile" {
					if strings.HasPrefix(l[1:], "  newTag: ") {
						continue
					}
					paths = append(paths, file+" ("+l+")")
					continue
				}
				lines = append(lines, l)
			}
		}
	}
	return paths, lines, nil
}

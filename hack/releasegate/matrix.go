package main

import (
	"fmt"
	"strings"
)

// Run is one line of test/k8s-matrix/results.jsonl (hack/k8s-matrix.sh).
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

// Covering returns the newest run that passed every version of want and
// whose commit's code is HEAD's, or nil and why none is. The newest
// passing run decides: an older one tested older code.
func Covering(runs []Run, want []string, changed gitDiff) (*Run, string) {
	why := "none is recorded"
	for i := len(runs) - 1; i >= 0; i-- {
		r := &runs[i]
		if missing := notPassed(r, want); len(missing) > 0 {
			why = fmt.Sprintf("the newest that could have, %s, did not pass %s", short(r.Commit), strings.Join(missing, ", "))
			continue
		}
		if why := notHeadsCode(r.Commit, changed); why != "" {
			return nil, "the newest passing run does not count: " + why
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

package main

import (
	"fmt"
	"regexp"
	"strings"
)

// MutationRun is what test/mutations/results.txt says of the last full
// make test-mutations run (hack/mutations.sh writes it) and of the patches
// run again since.
type MutationRun struct {
	// Commit is the full run's; Dirty when the tree had uncommitted
	// changes, whose code no commit holds.
	Commit string
	Dirty  bool
	// Control is whether each test was run without its mutant too, so that
	// a test failing at HEAD could not count as a catch.
	Control bool
	// Rows are the outcome lines by patch name ("caught", "SURVIVED", ...),
	// and RunAgainAt the commit of the newest run again of a patch, when
	// one was (make test-mutations MUTATIONS=... UPDATE_RESULTS=1).
	Rows       map[string]string
	RunAgainAt map[string]string
}

var (
	mutationHeader = regexp.MustCompile(`^# make test-mutations \(.*control runs without the mutation: (on|off)\)$`)
	mutationCommit = regexp.MustCompile(`^# commit ([0-9a-f]{40})( \(with uncommitted changes\))?, `)
	mutationAgain  = regexp.MustCompile(`^# run again at commit ([0-9a-f]{40}), \S+: (.*)$`)
	mutationRow    = regexp.MustCompile(`^([A-Za-z]+) +([a-z0-9-]+)[ :]`)
)

// ParseMutations reads results.txt.
func ParseMutations(text string) (MutationRun, error) {
	run := MutationRun{Rows: map[string]string{}, RunAgainAt: map[string]string{}}
	header := false
	for _, line := range strings.Split(text, "\n") {
		if m := mutationHeader.FindStringSubmatch(line); m != nil {
			header, run.Control = true, m[1] == "on"
			continue
		}
		if m := mutationCommit.FindStringSubmatch(line); m != nil {
			run.Commit, run.Dirty = m[1], m[2] != ""
			continue
		}
		if m := mutationAgain.FindStringSubmatch(line); m != nil {
			for _, name := range strings.Split(m[2], ", ") {
				run.RunAgainAt[strings.TrimSpace(name)] = m[1]
			}
			continue
		}
		if strings.HasPrefix(line, "mutations: ") || strings.TrimSpace(line) == "" {
			continue
		}
		if m := mutationRow.FindStringSubmatch(line); m != nil {
			run.Rows[m[2]] = m[1]
		}
	}
	if !header || run.Commit == "" {
		return run, fmt.Errorf("not the results of a full make test-mutations run (no header naming its commit)")
	}
	return run, nil
}

// MutationProblems lists why run does not show every patch of patches (the
// names of test/mutations/*.patch) caught at HEAD's code, nil when it does.
func MutationProblems(run MutationRun, patches []string, changed gitDiff) []string {
	var problems []string
	if run.Dirty {
		problems = append(problems, fmt.Sprintf("the full run at %s was made with uncommitted changes", short(run.Commit)))
	}
	if !run.Control {
		problems = append(problems, "the full run was made with its control runs off (CONTROL=0): a test that fails at HEAD would count as a catch")
	}
	why := map[string]string{}
	notHeads := func(commit string) string {
		if w, ok := why[commit]; ok {
			return w
		}
		why[commit] = notHeadsCode(commit, changed)
		return why[commit]
	}
	var stale int
	for _, name := range patches {
		outcome, ok := run.Rows[name]
		switch {
		case !ok:
			problems = append(problems, name+": not in the run")
		case outcome != "caught":
			problems = append(problems, fmt.Sprintf("%s: %s, not caught", name, outcome))
		case run.RunAgainAt[name] != "":
			if w := notHeads(run.RunAgainAt[name]); w != "" {
				problems = append(problems, fmt.Sprintf("%s, run again: %s", name, w))
			}
		case notHeads(run.Commit) != "":
			stale++
		}
	}
	if stale > 0 {
		problems = append(problems, fmt.Sprintf("the full run does not count for %d of the %d patches: %s", stale, len(patches), notHeads(run.Commit)))
	}
	return problems
}

package main

import (
	"fmt"
	"os/exec"
	"path"
	"strings"
)

// gitDiff lists what differs between a commit and HEAD: the paths changed
// outside the Makefile (config/manager/kustomization.yaml's changed lines
// other than the image tag, as "path (line)"), and the Makefile's changed
// lines.
type gitDiff func(commit string) (paths, makefile []string, err error)

// evidencePaths are the results files and what is rendered from them: a
// commit that differs from HEAD only in them (and in Markdown and what make
// release writes) tested HEAD's code.
var evidencePaths = []string{
	"test/k8s-matrix/",
	"test/reliability/results/",
	"test/mutations/results.txt",
	"test/bench/results/",
	"docs/bench/",
}

// notHeadsCode says why commit's code is not HEAD's, "" when it is.
func notHeadsCode(commit string, changed gitDiff) string {
	paths, makefile, err := changed(commit)
	if err != nil {
		return fmt.Sprintf("%s: %v", short(commit), err)
	}
	code := codeChanges(paths, makefile)
	switch {
	case len(code) == 0:
		return ""
	case len(code) > 5:
		return fmt.Sprintf("it tested %s, and code changed since: %s and %d more", short(commit), strings.Join(code[:5], ", "), len(code)-5)
	default:
		return fmt.Sprintf("it tested %s, and code changed since: %s", short(commit), strings.Join(code, ", "))
	}
}

// codeChanges keeps the changes that can change what the suites test.
func codeChanges(paths, makefile []string) []string {
	var code []string
	for _, p := range paths {
		if path.Ext(p) == ".md" || p == "bundle.Dockerfile" || strings.HasPrefix(p, "bundle/") || strings.HasPrefix(p, "charts/") || isEvidence(p) {
			continue
		}
		code = append(code, p)
	}
	for _, line := range makefile {
		if !strings.HasPrefix(line[1:], "IMG ?= ") {
			code = append(code, "Makefile ("+line+")")
		}
	}
	return code
}

func isEvidence(p string) bool {
	for _, e := range evidencePaths {
		if p == e || strings.HasSuffix(e, "/") && strings.HasPrefix(p, e) {
			return true
		}
	}
	return false
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// gitChanges asks git what differs between commit and HEAD, once per
// commit. The image tag of config/manager/kustomization.yaml is make
// release's; any other line of it is code, so the file is read line by
// line like the Makefile.
func gitChanges() gitDiff {
	type diff struct {
		paths, makefile []string
		err             error
	}
	seen := map[string]diff{}
	return func(commit string) ([]string, []string, error) {
		d, ok := seen[commit]
		if !ok {
			d.paths, d.makefile, d.err = changedSince(commit)
			seen[commit] = d
		}
		return d.paths, d.makefile, d.err
	}
}

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

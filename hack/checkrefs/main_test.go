package main

import (
	"os"
	"testing"
)

// TestCheckCited runs from hack/checkrefs, so the repository's files are
// two folders up: the checks resolve paths from the working directory.
func TestCheckCited(t *testing.T) {
	t.Chdir("../..")
	for _, tc := range []struct {
		name, from, text string
		bad              int
	}{
		{"a file that exists", "README.md", "see `internal/app/app.go`", 0},
		{"a folder that exists", "README.md", "see `config/default`", 0},
		{"a package pattern", "README.md", "go test ./internal/app/...", 0},
		{"a package and an identifier", "main.go", "// internal/app.New builds it", 0},
		{"a file that is gone", "README.md", "see `internal/gone/x.go`", 1},
		{"a file name that is not a package identifier", "main.go", "// internal/app.go", 1},
		{"a design file outside the repository", "main.go", "// as DESIGN.md says", 1},
		{"the project's design file", "main.go", "// as docs/DESIGN.md says", 0},
		{"a placeholder", "README.md", "`bundle/releases/vX.Y.Z`", 0},
		{"an API server path", "README.md", "`/apis/example.com/v1/drinks`", 0},
		{"another module's path", "main.go", "// sigs.k8s.io/controller-runtime/pkg/internal/x", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkCited(tc.from, 1, tc.text); len(got) != tc.bad {
				t.Errorf("checkCited(%q) = %v, want %d findings", tc.text, got, tc.bad)
			}
		})
	}
}

func TestLinked(t *testing.T) {
	t.Chdir("../..")
	for _, tc := range []struct {
		from, ref string
		ok        bool
	}{
		{"README.md", "docs/api.md", true},
		{"docs/README.md", "api.md", true},
		// A viewer resolves a link from the linking file's folder.
		{"docs/README.md", "docs/api.md", false},
		{"docs/README.md", "/docs/api.md", true},
		{"docs/README.md", "../CONTRIBUTING.md", true},
		{"README.md", "docs/nowhere.md", false},
	} {
		if got := linked(tc.from, tc.ref); got != tc.ok {
			t.Errorf("linked(%q, %q) = %t, want %t", tc.from, tc.ref, got, tc.ok)
		}
	}
}

func TestIssueNumbers(t *testing.T) {
	for _, tc := range []struct {
		line string
		hit  bool
	}{
		{"fixed in issue 14", true},
		{"see Issue #15.", true},
		{"the rotator issues 1-year certificates", false},
		{"cert-manager issued the CA twice", false},
		{"kubernetes/kubernetes#130887", false},
	} {
		if got := issue.MatchString(tc.line); got != tc.hit {
			t.Errorf("%q: issue number found %t, want %t", tc.line, got, tc.hit)
		}
	}
	if _, err := os.Stat("main.go"); err != nil {
		t.Fatal(err)
	}
}

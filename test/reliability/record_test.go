package reliability

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fatalTB records a Fatalf instead of stopping the test, so that a table
// can ask whether commit refused.
type fatalTB struct {
	testing.TB
	fatal string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	panic(f)
}

// refused runs commit as a test in dir does and returns its refusal, or
// "" when it named HEAD.
func refused(t *testing.T, dir string) (refusal string) {
	t.Helper()
	t.Chdir(dir)
	tb := &fatalTB{TB: t}
	defer func() {
		if r := recover(); r != nil && r != tb {
			panic(r)
		}
		refusal = tb.fatal
	}()
	if head := commit(tb); len(head) != 40 {
		t.Errorf("commit = %q, want HEAD's hash", head)
	}
	return ""
}

// TestCommitIgnoresOnlyResults: the records a run writes do not stop the
// next test of the same run from recording (each test runs in its own
// package folder), and any other change does.
func TestCommitIgnoresOnlyResults(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	tests := []struct {
		name, change, want string
	}{
		{"clean", "", ""},
		{"a record written", "test/reliability/results/TestA.jsonl", ""},
		{"the document rendered", "docs/RELIABILITY.md", ""},
		{"code changed", "pkg/a.go", "uncommitted changes"},
		{"code changed outside the test's folder", "other/b.go", "uncommitted changes"},
		{"a results file elsewhere", "pkg/test/reliability/results/TestA.jsonl", "uncommitted changes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			repo := t.TempDir()
			files := []string{"test/reliability/results/TestA.jsonl", "docs/RELIABILITY.md", "pkg/a.go", "other/b.go", "pkg/test/reliability/results/TestA.jsonl"}
			for _, f := range files {
				p := filepath.Join(repo, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte("one\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, args := range [][]string{
				{"init", "-q"}, {"add", "."},
				{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "x"},
			} {
				if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
					t.Fatalf("git %v: %v: %s", args, err, out)
				}
			}
			if tc.change != "" {
				if err := os.WriteFile(filepath.Join(repo, tc.change), []byte("two\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got := refused(t, filepath.Join(repo, "pkg"))
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("after changing %q: refusal %q, want one saying %q", tc.change, got, tc.want)
			}
		})
	}
}

package scripts

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/example/myoperator/test/framework/testutil"
)

// fixedTmpPath is a path under /tmp whose name is fixed: one that another
// local user could create before a root command uses it (a symbolic link,
// or a lock held forever). mktemp's templates (XXXXXX) are not fixed.
var fixedTmpPath = regexp.MustCompile(`/tmp/[A-Za-z0-9_.-]+`)

// tmpInContainer are fixed /tmp paths that exist only inside the
// manager's container (its own read-only root, an emptyDir mounted there),
// never on a machine where someone runs the docs' commands.
var tmpInContainer = []string{"/tmp/k8s-webhook-server"}

// TestNoFixedTmpPathsInInstructions: the Makefile, its make/*.mk, the
// hack/ scripts and the docs (whose commands are often run as root: the
// benchmarks and the real node need a network namespace) name no fixed
// path in /tmp; they keep such files under the checkout's bin/.
func TestNoFixedTmpPathsInInstructions(t *testing.T) {
	root, err := testutil.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, pattern := range []string{"Makefile", "make/*.mk", "hack/*.sh", "hack/node/*.sh", "*.md", "docs/*.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 10 {
		t.Fatalf("found %d files to read, the layout moved", len(files))
	}
	for _, f := range files {
		if filepath.Base(f) == "RELEASES.md" {
			continue // the record of what changed names the paths that were
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, p := range fixedTmpPath.FindAllString(line, -1) {
				if strings.Contains(p, "XXXXXX") || inContainer(p) {
					continue
				}
				rel, _ := filepath.Rel(root, f)
				t.Errorf("%s:%d: %s is a fixed path in /tmp: keep it under bin/ (or make it with mktemp)", rel, i+1, p)
			}
		}
	}
}

func inContainer(p string) bool {
	for _, c := range tmpInContainer {
		if strings.HasPrefix(p, c) {
			return true
		}
	}
	return false
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck: an unmarked command block, a run marker no test names, a
// not-run marker without a reason and a test naming a block that is not
// there are each reported with file, line and rule; a block named by a
// test and one marked not run with a reason pass.
func TestCheck(t *testing.T) {
	root := t.TempDir()
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, path), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "<!-- run: course -->\n```sh\nmake run\n```\n\n```sh\nmake deploy\n```\n")
	write("docs/install.md", "<!-- not run: needs a registry -->\n```sh\nmake docker-push\n```\n\n<!-- run: orphan -->\n```sh\nmake x\n```\n")
	write("docs/demo.md", "<!-- not run: -->\n```console\n$ make demo\n```\n")
	write("docs/plugin.md", "```yaml\nkind: X\n```\n")
	write("test/userpaths/x_test.go", `package x // runs "README.md::course" and "docs/install.md::gone"`)

	problems, summary, err := check(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README.md:6: sh command block that no test runs and no marker accounts for",
		"docs/install.md:7: marked <!-- run: orphan --> but no test or script names docs/install.md::orphan",
		"docs/demo.md:2: <!-- not run: --> gives no reason",
		"test/userpaths/x_test.go names docs/install.md::gone, which is no command block marked run",
	}
	if strings.Join(problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
	if summary[0] != "README.md: 2 command blocks, 1 run by tests, 0 marked not run" {
		t.Errorf("summary %q", summary)
	}
}

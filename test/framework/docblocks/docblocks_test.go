package docblocks

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestParseAndCommands(t *testing.T) {
	dir := t.TempDir()
	md := "# Title\n\n" +
		"<!-- run: course -->\n```sh\nmake install         # the CRDs\nmake run\nkubectl patch x --type=merge \\\n  -p '{\"a\":\"#b\"}'\n\n```\n\n" +
		"<!-- not run: needs a real registry -->\n```sh\nmake docker-push IMG=r/x\n```\n\n" +
		"```yaml\nkind: Drink\n```\n\n" +
		"- a list item:\n\n  ```sh\n  make demo\n  ```\n\n" +
		"<!-- run: out -->\n```console\n$ make uninstall\nuninstall: nothing deleted\n```\n"
	if err := os.WriteFile(filepath.Join(dir, "x.md"), []byte(md), 0o600); err != nil {
		t.Fatal(err)
	}
	blocks, err := Parse(dir, "x.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 4 {
		t.Fatalf("%d command blocks %+v, want 4 (the yaml block is none)", len(blocks), blocks)
	}
	for i, want := range []struct {
		run, notRun string
		line        int
		cmds        []string
	}{
		{run: "course", line: 4, cmds: []string{"make install", "make run", `kubectl patch x --type=merge   -p '{"a":"#b"}'`}},
		{notRun: "needs a real registry", line: 13, cmds: []string{"make docker-push IMG=r/x"}},
		{line: 23, cmds: []string{"make demo"}},
		{run: "out", line: 28, cmds: []string{"make uninstall"}},
	} {
		b := blocks[i]
		if b.Run != want.run || b.NotRun != want.notRun || b.Line != want.line || !slices.Equal(b.Commands(), want.cmds) {
			t.Errorf("block %d: run %q not run %q line %d commands %q; want %q %q %d %q", i, b.Run, b.NotRun, b.Line, b.Commands(), want.run, want.notRun, want.line, want.cmds)
		}
	}
	if b, err := Get(dir, "x.md::out"); err != nil || b.Line != 28 {
		t.Errorf("Get x.md::out: %+v, %v", b, err)
	}
	if _, err := Get(dir, "x.md::gone"); err == nil {
		t.Error("Get of a block that is not there: no error")
	}
}

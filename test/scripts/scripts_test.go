package scripts

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/example/myoperator/test/framework/testutil"
)

func run(t *testing.T, env []string, name string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return string(out), code
}

// TestPreviousReleaseChecksItsInput: hack/previous-release.sh removes and
// recreates bin/releases/<version>; a PREVIOUS_RELEASE whose version is a
// path, or whose commit is not a hash, and a release argument that is not
// a version or not one of RELEASES.md, are refused before anything is
// removed.
func TestPreviousReleaseChecksItsInput(t *testing.T) {
	root := testutil.RepoRoot(t)
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	commit := strings.TrimSpace(string(head))
	victim := filepath.Join(root, "bin", "scripts-test-victim")
	if err := os.MkdirAll(victim, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(victim) })
	if err := os.WriteFile(filepath.Join(victim, "keep"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ release, arg, want string }{
		{"v0.1.0/../../scripts-test-victim@" + commit, "", "is not vX.Y.Z"},
		{"../scripts-test-victim@" + commit, "", "is not vX.Y.Z"},
		{"v0.1.0@$(touch /tmp/pwned)", "", "is not a commit hash"},
		{"v0.1.0@HEAD~1", "", "is not a commit hash"},
		{"", "../scripts-test-victim", "is not vX.Y.Z"},
		{"", "v0.1.0/../../scripts-test-victim", "is not vX.Y.Z"},
		{"", "v999.0.0", "RELEASES.md records no release v999.0.0"},
	}
	for _, tc := range tests {
		var env, args []string
		if tc.release != "" {
			env = []string{"PREVIOUS_RELEASE=" + tc.release}
		}
		if tc.arg != "" {
			args = []string{tc.arg}
		}
		out, code := run(t, env, filepath.Join(root, "hack", "previous-release.sh"), args...)
		if code == 0 || !strings.Contains(out, tc.want) {
			t.Errorf("PREVIOUS_RELEASE=%s, argument %q: exit %d, %q; want a refusal saying %q", tc.release, tc.arg, code, out, tc.want)
		}
		if _, err := os.Stat(filepath.Join(victim, "keep")); err != nil {
			t.Fatalf("PREVIOUS_RELEASE=%s, argument %q removed %s: %v", tc.release, tc.arg, victim, err)
		}
	}
}

// TestNodeStateFolderPrivate: hack/node/node.sh keeps static pod
// manifests and pid files it signals in its state folder (NODE_WORK): a
// symbolic link or another user's folder is refused; a new one is made
// mode 0700. (An unknown command stops the script right after the check.)
func TestNodeStateFolderPrivate(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("node.sh runs as root; the foreign owner needs chown")
	}
	root := testutil.RepoRoot(t)
	script := filepath.Join(root, "hack", "node", "node.sh")
	dir := t.TempDir()
	elsewhere := filepath.Join(dir, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, "foreign")
	if err := os.Mkdir(foreign, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(foreign, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "fresh", "work")
	tests := []struct {
		work     string
		wantCode int
		want     string
	}{
		{link, 1, "is a symbolic link"},
		{foreign, 1, "belongs to uid 12345"},
		{fresh, 2, "usage:"},
	}
	for _, tc := range tests {
		out, code := run(t, []string{"NODE_WORK=" + tc.work}, script, "no-such-command")
		if code != tc.wantCode || !strings.Contains(out, tc.want) {
			t.Errorf("NODE_WORK=%s: exit %d, %q; want exit %d saying %q", tc.work, code, out, tc.wantCode, tc.want)
		}
	}
	fi, err := os.Stat(fresh)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("%s made with mode %v, want 0700", fresh, fi.Mode().Perm())
	}
}

package version_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/example/myoperator/internal/version"
)

// TestMakeRelease runs make release in a clone of the repository's HEAD, so
// the real record stays untouched: an existing version, an older one and a
// non-semver one are refused with their reason and change nothing; a new
// version is recorded from HEAD's commit with the Unreleased notes, moves
// the image tags and the bundle, and prints the commands to commit and tag;
// the tree's version is then the release's, and one commit later describes
// its distance from it. The images are left out (RELEASE_IMAGES=0): make
// test-image checks them.
func TestMakeRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("clones the repository and runs make")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "repo")
	mustRun(t, root, "git", "clone", "-q", "--no-hardlinks", root, clone)
	// make bundle needs controller-gen: the one make built for the
	// repository, where there is one (a fresh machine builds it).
	if gens, _ := filepath.Glob(filepath.Join(root, "bin", "controller-gen-*")); len(gens) > 0 {
		if err := os.MkdirAll(filepath.Join(clone, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, g := range gens {
			if err := os.Symlink(g, filepath.Join(clone, "bin", filepath.Base(g))); err != nil {
				t.Fatal(err)
			}
		}
	}
	record := filepath.Join(clone, "RELEASES.md")
	rec, err := version.ReadRecord(record)
	if err != nil {
		t.Fatal(err)
	}
	commit := func(message string) {
		mustRun(t, clone, "git", "add", "-A")
		mustRun(t, clone, "git", "-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-q", "-m", message)
	}
	// Right after a release the record has no notes to release: give it one.
	if rec.Unreleased == "" {
		raw, err := os.ReadFile(record)
		if err != nil {
			t.Fatal(err)
		}
		raw = []byte(strings.Replace(string(raw), "## Unreleased\n", "## Unreleased\n\n### Fixed\n\n- A fix.\n", 1))
		if err := os.WriteFile(record, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		commit("Notes")
	}
	before, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	newest, _ := rec.Newest()
	// The first candidate of the next minor release, then that release.
	final := version.Semver{Major: newest.Version.Major, Minor: newest.Version.Minor + 1}
	next := final
	next.Pre = "rc.1"
	// A version below the newest that no release has (x.y.999 is never cut).
	older := version.Semver{Major: newest.Version.Major, Minor: newest.Version.Minor - 1, Patch: 999}
	if newest.Version.Minor == 0 {
		older = version.Semver{Major: newest.Version.Major - 1, Minor: 999, Patch: 999}
	}

	for _, refused := range []struct{ version, message string }{
		{strings.TrimPrefix(newest.Version.String(), "v"), newest.Version.String() + " is already released"},
		{older.String(), "is not newer than the newest release " + newest.Version.String()},
		{"1.2", `"1.2" is not a release version`},
		{"1.2.3-rc.01", `"1.2.3-rc.01" is not a release version`},
	} {
		out, err := runMake(clone, "release", "VERSION="+refused.version)
		if err == nil || !strings.Contains(out, refused.message) {
			t.Errorf("make release VERSION=%s: %v, want a non-zero exit saying %q:\n%s", refused.version, err, refused.message, out)
		}
		if status := mustRun(t, clone, "git", "status", "--porcelain"); status != "" {
			t.Fatalf("make release VERSION=%s changed files:\n%s", refused.version, status)
		}
	}

	head := mustRun(t, clone, "git", "rev-parse", "HEAD")
	start := time.Now()
	out, err := runMake(clone, "release", "VERSION="+strings.TrimPrefix(next.String(), "v"), "RELEASE_IMAGES=0")
	if err != nil {
		t.Fatalf("make release VERSION=%s: %v\n%s", next, err, out)
	}
	t.Logf("make release %s (no images) took %s", next, time.Since(start).Round(time.Second))
	if !strings.Contains(out, "git tag -a "+next.String()+" "+head) {
		t.Errorf("make release does not print the tag command for %s at %s:\n%s", next, head, out)
	}
	rec, err = version.ReadRecord(record)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := rec.Newest(); got.Version != next || got.Commit != head || got.Date != time.Now().UTC().Format(time.DateOnly) {
		t.Errorf("newest release after make release = %+v, want %s from %s today", got, next, head)
	}
	after, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	// The candidate's section lists the notes, which stay under
	// Unreleased for the final release.
	_, notes, _ := strings.Cut(string(before), "## Unreleased\n")
	notes, _, _ = strings.Cut(notes, "\n## v")
	if rec.Unreleased != strings.TrimSpace(notes) || !strings.Contains(string(after), "Commit: "+head+"\n"+notes) {
		t.Errorf("RELEASES.md after make release: Unreleased %q, want the notes kept there and under %s:\n%s", rec.Unreleased, next, after)
	}
	for file, want := range map[string]string{
		"config/manager/kustomization.yaml": `(?m)^  newTag: ` + regexp.QuoteMeta(next.String()) + `$`,
		"Makefile":                          `(?m)^IMG \?= \$\(IMAGE_REPO\):` + regexp.QuoteMeta(next.String()) + `$`,
		"bundle/manifests/myoperator.clusterserviceversion.yaml": `(?m)^  version: ` + regexp.QuoteMeta(strings.TrimPrefix(next.String(), "v")) + `$`,
	} {
		raw, err := os.ReadFile(filepath.Join(clone, file))
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(want).Match(raw) {
			t.Errorf("%s after make release lacks %s", file, want)
		}
	}
	// The tree is the release's (the record names HEAD), with the
	// release's own files changed; once committed, one commit past it.
	if got := mustRun(t, clone, "go", "run", "./hack/version"); got != next.String()+"-dirty" {
		t.Errorf("version before the commit = %q, want %s-dirty", got, next)
	}
	commit("Release " + next.String())
	short := mustRun(t, clone, "git", "rev-parse", "--short=7", "HEAD")
	if got, want := mustRun(t, clone, "go", "run", "./hack/version"), next.String()+"-1-g"+short; got != want {
		t.Errorf("version after the commit = %q, want %q", got, want)
	}
	out, err = runMake(clone, "release", "VERSION="+strings.TrimPrefix(next.String(), "v"))
	if err == nil || !strings.Contains(out, next.String()+" is already released") {
		t.Errorf("make release of the new %s again: %v, want it refused:\n%s", next, err, out)
	}

	// The final release after its candidate: its section lists the same
	// notes, Unreleased is empty, and the bundle replaces the candidate's.
	head = mustRun(t, clone, "git", "rev-parse", "HEAD")
	if out, err := runMake(clone, "release", "VERSION="+strings.TrimPrefix(final.String(), "v"), "RELEASE_IMAGES=0"); err != nil {
		t.Fatalf("make release VERSION=%s: %v\n%s", final, err, out)
	}
	rec, err = version.ReadRecord(record)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := rec.Newest(); got.Version != final || got.Commit != head || rec.Unreleased != "" {
		t.Errorf("after make release %s: newest %+v, Unreleased %q; want %s from %s and no notes left", final, got, rec.Unreleased, final, head)
	}
	after, err = os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(after), "Commit: "+head+"\n"+notes) {
		t.Errorf("RELEASES.md after make release %s lacks the notes under it:\n%s", final, after)
	}
	csv, err := os.ReadFile(filepath.Join(clone, "bundle", "releases", final.String(), "manifests", "myoperator.clusterserviceversion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "replaces: myoperator.v" + strings.TrimPrefix(next.String(), "v"); !strings.Contains(string(csv), want) {
		t.Errorf("the %s bundle's CSV lacks %q", final, want)
	}
}

// runMake runs make in dir; a make started by make (make test) must not
// inherit the outer make's flags and variables.
func runMake(dir string, args ...string) (string, error) {
	cmd := exec.Command("make", append([]string{"--no-print-directory"}, args...)...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MAKELEVEL" && k != "MFLAGS" && k != "VERSION" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func mustRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
			stderr = exit.Stderr
		}
		t.Fatalf("%s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return strings.TrimSpace(string(out))
}

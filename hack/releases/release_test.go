package releases_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/example/myoperator/hack/releases"
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
	// make bundle needs controller-gen and make dist cyclonedx-gomod, helm,
	// krew and cosign: the ones make built for the repository, where there are
	// (make test builds them on a fresh machine, outside the network
	// namespace).
	var gens []string
	for _, tool := range []string{"controller-gen-*", "cyclonedx-gomod-*", "helm-*", "krew-*", "cosign-*"} {
		found, _ := filepath.Glob(filepath.Join(root, "bin", tool))
		gens = append(gens, found...)
	}
	if len(gens) > 0 {
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
	rec, err := releases.ReadRecord(record)
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
	final := releases.Semver{Major: newest.Version.Major, Minor: newest.Version.Minor + 1}
	next := final
	next.Pre = "rc.1"
	// A version below the newest that no release has (x.y.999 is never cut).
	older := releases.Semver{Major: newest.Version.Major, Minor: newest.Version.Minor - 1, Patch: 999}
	if newest.Version.Minor == 0 {
		older = releases.Semver{Major: newest.Version.Major - 1, Minor: 999, Patch: 999}
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

	// The release gate (hack/releasegate): with none of HEAD's evidence
	// recorded (a clone's HEAD may carry some, so every results file is
	// emptied first), make release is refused naming all four kinds. Each
	// kind is then recorded at HEAD and committed in turn, so that the
	// later commits differ from the earlier records' commits only in
	// results files: each refusal names only what is still missing, and
	// with all four the release goes through, as does the release commit
	// after it, which changes only what make release writes.
	evidence := []struct {
		kind, refusal string
		record        func(head string)
	}{
		{"the version matrix", "no make test-k8s-matrix run recorded in test/k8s-matrix/results.jsonl covers HEAD's code", func(head string) {
			var versions []string
			for _, v := range makeVariable(t, clone, "KUBE_MATRIX_VERSIONS", " ") {
				versions = append(versions, fmt.Sprintf(`{"kubernetes":%q,"result":"passed","seconds":1}`, v))
			}
			writeFile(t, filepath.Join(clone, "test", "k8s-matrix", "results.jsonl"), fmt.Sprintf(
				`{"date":"2026-01-01T00:00:00Z","commit":%q,"command":"written by TestMakeRelease","versions":[%s]}`+"\n", head, strings.Join(versions, ",")))
		}},
		{"the reliability suites", "the reliability suites (make reliability)", func(head string) {
			for _, test := range makeVariable(t, clone, "RELIABILITY_TESTS", "|") {
				writeFile(t, filepath.Join(clone, "test", "reliability", "results", test+".jsonl"), fmt.Sprintf(
					`{"test":%q,"date":"2026-01-01T00:00:00Z","commit":%q,"command":"written by TestMakeRelease","figures":{}}`+"\n", test, head))
			}
		}},
		{"the mutation suite", "the mutation suite (make test-mutations)", func(head string) {
			patches, err := filepath.Glob(filepath.Join(clone, "test", "mutations", "*.patch"))
			if err != nil || len(patches) == 0 {
				t.Fatalf("no mutation patches in the clone: %v", err)
			}
			text := "# make test-mutations (hack/mutations.sh, every patch; control runs without the mutation: on)\n" +
				"# commit " + head + ", 2026-01-01T00:00:00Z, 2 cores, written by TestMakeRelease\n"
			for _, p := range patches {
				text += "caught    " + strings.TrimSuffix(filepath.Base(p), ".patch") + " by ./pkg/ ^TestX$ in 1s: written by TestMakeRelease\n"
			}
			writeFile(t, filepath.Join(clone, "test", "mutations", "results.txt"), text)
		}},
		{"the quick benchmark", "no make bench run recorded in test/bench/results/quick.jsonl covers HEAD's code", func(head string) {
			writeFile(t, filepath.Join(clone, "test", "bench", "results", "quick.jsonl"), fmt.Sprintf(
				`{"Date":"2026-01-01T00:00:00Z","N":1000,"Command":"written by TestMakeRelease","Commit":%q}`+"\n", head))
		}},
	}
	for _, f := range []string{"test/k8s-matrix/results.jsonl", "test/mutations/results.txt", "test/bench/results/quick.jsonl"} {
		writeFile(t, filepath.Join(clone, f), "")
	}
	if err := os.RemoveAll(filepath.Join(clone, "test", "reliability", "results")); err != nil {
		t.Fatal(err)
	}
	commit("No evidence recorded")
	for i := range evidence {
		out, err := runMake(clone, "release", "VERSION="+strings.TrimPrefix(next.String(), "v"), "RELEASE_IMAGES=0")
		if err == nil {
			t.Errorf("make release VERSION=%s without %s recorded: <nil>, want it refused for that:\n%s", next, evidence[i].kind, out)
		}
		for j, e := range evidence {
			if named := strings.Contains(out, e.refusal); named != (j >= i) {
				t.Errorf("make release VERSION=%s with %d kinds recorded: names %s %v, want %v:\n%s", next, i, e.kind, named, j >= i, out)
			}
		}
		if status := mustRun(t, clone, "git", "status", "--porcelain"); status != "" {
			t.Fatalf("the refused make release changed files:\n%s", status)
		}
		evidence[i].record(mustRun(t, clone, "git", "rev-parse", "HEAD"))
		commit("Record " + evidence[i].kind)
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
	rec, err = releases.ReadRecord(record)
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
	checkDist(t, clone, next)
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
	rec, err = releases.ReadRecord(record)
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

// checkDist: make release wrote what the release publishes into dist/,
// without images (RELEASE_IMAGES=0): both install manifests naming the
// release's image, the bundle, a CycloneDX SBOM of each binary, and
// SHA256SUMS that hold for every file and list them all.
func checkDist(t *testing.T, clone string, v releases.Semver) {
	t.Helper()
	dist := filepath.Join(clone, "dist")
	image := "image: ghcr.io/example/myoperator:" + v.String()
	for _, name := range []string{"install.yaml", "install-certmanager.yaml"} {
		raw, err := os.ReadFile(filepath.Join(dist, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{image, "kind: CustomResourceDefinition", "kind: Deployment", "kind: FlowSchema", "kind: PodDisruptionBudget"} {
			if !strings.Contains(string(raw), want) {
				t.Errorf("dist/%s lacks %q", name, want)
			}
		}
	}
	if raw, err := os.ReadFile(filepath.Join(dist, "install-certmanager.yaml")); err != nil || !strings.Contains(string(raw), "kind: Certificate") {
		t.Errorf("dist/install-certmanager.yaml has no cert-manager Certificate (%v)", err)
	}
	bundle := mustRun(t, dist, "tar", "-tzf", "myoperator-bundle_"+v.String()+".tar.gz")
	if !strings.Contains(bundle, "manifests/myoperator.clusterserviceversion.yaml") || !strings.Contains(bundle, "metadata/annotations.yaml") {
		t.Errorf("the bundle archive lacks the CSV or the annotations:\n%s", bundle)
	}
	// The chart: packaged by helm, versioned as the release, its default
	// values naming the release's image.
	chart := "myoperator-" + strings.TrimPrefix(v.String(), "v") + ".tgz"
	values := mustRun(t, dist, "tar", "-xzOf", chart, "myoperator/values.yaml")
	meta := mustRun(t, dist, "tar", "-xzOf", chart, "myoperator/Chart.yaml")
	if !strings.Contains(values, "repository: ghcr.io/example/myoperator\n  tag: \""+v.String()+"\"") || !regexp.MustCompile(`(?m)^version: `+regexp.QuoteMeta(strings.TrimPrefix(v.String(), "v"))+`$`).MatchString(meta) {
		t.Errorf("dist/%s: values.yaml or Chart.yaml do not name %s:\n%s\n%s", chart, v, meta, values)
	}
	sboms, _ := filepath.Glob(filepath.Join(dist, "sbom", "*.cdx.json"))
	var sbomNames []string
	for _, path := range sboms {
		sbomNames = append(sbomNames, filepath.Base(path))
	}
	var wantSBOMs []string
	for _, bin := range []string{"bootstrap", "guestbook-server", "kubectl-myoperator", "manager"} {
		wantSBOMs = append(wantSBOMs, bin+"_linux_"+runtime.GOARCH+".cdx.json")
	}
	if !slices.Equal(sbomNames, wantSBOMs) {
		t.Errorf("SBOMs %v, want one per binary: %v", sbomNames, wantSBOMs)
	}
	for _, path := range sboms {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var bom struct {
			BOMFormat string `json:"bomFormat"`
			Metadata  struct {
				Component struct{ Name, Version string } `json:"component"`
			} `json:"metadata"`
			Components []struct{ Name string } `json:"components"`
		}
		if err := json.Unmarshal(raw, &bom); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if bom.BOMFormat != "CycloneDX" || bom.Metadata.Component.Name != "github.com/example/myoperator" || bom.Metadata.Component.Version != v.String() {
			t.Errorf("%s: format %q, component %+v; want CycloneDX for github.com/example/myoperator %s", path, bom.BOMFormat, bom.Metadata.Component, v)
		}
		if strings.Contains(path, "manager_") && len(bom.Components) < 10 {
			t.Errorf("%s lists %d modules, want the manager's dependencies", path, len(bom.Components))
		}
	}
	// Every file is summed, and every sum holds; signatures/ holds what
	// proves them (hack/sign.sh), each file's signature among it.
	sums := mustRun(t, dist, "sha256sum", "-c", "SHA256SUMS")
	var files []string
	err := filepath.WalkDir(dist, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == "signatures" {
			return filepath.SkipDir
		}
		if err == nil && !d.IsDir() && d.Name() != "SHA256SUMS" {
			rel, _ := filepath.Rel(dist, path)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !strings.Contains(sums, f+": OK") {
			t.Errorf("SHA256SUMS does not check %s:\n%s", f, sums)
		}
		if _, err := os.Stat(filepath.Join(dist, "signatures", f+".sigstore.json")); err != nil {
			t.Errorf("%s is not signed: %v", f, err)
		}
	}
	for _, f := range []string{"cosign.pub", "provenance.intoto.json", "provenance.sigstore.json"} {
		if _, err := os.Stat(filepath.Join(dist, "signatures", f)); err != nil {
			t.Errorf("dist/signatures/%s: %v", f, err)
		}
	}
}

// makeVariable reads a variable's default from the clone's Makefile or
// make/*.mk ("NAME ?= value"), split at sep.
func makeVariable(t *testing.T, clone, name, sep string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(clone, "make", "*.mk"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` \?= (.+)$`)
	for _, f := range append([]string{filepath.Join(clone, "Makefile")}, files...) {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := re.FindSubmatch(raw); m != nil {
			var values []string
			for _, v := range strings.Split(string(m[1]), sep) {
				if v = strings.TrimSpace(v); v != "" {
					values = append(values, v)
				}
			}
			return values
		}
	}
	t.Fatalf("the Makefile sets no %s", name)
	return nil
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
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

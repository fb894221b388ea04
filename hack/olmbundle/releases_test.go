package olmbundle_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/example/myoperator/hack/olmbundle"
	"github.com/example/myoperator/test/framework/testutil"
)

func versions(t *testing.T, ss ...string) []olmbundle.Version {
	t.Helper()
	out := make([]olmbundle.Version, 0, len(ss))
	for _, s := range ss {
		v, err := olmbundle.ParseVersion(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// TestCurrentVersion: bundle/'s version is the newest release of the
// release record, as package version reads it (its format is tested
// there); a record it refuses is an error, not a guess.
func TestCurrentVersion(t *testing.T) {
	const sha1, sha2 = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	cases := []struct {
		name, content, want, wantErr string
	}{
		{name: "no file", want: olmbundle.FallbackVersion},
		{name: "newest release", content: "# Releases\n\n## Unreleased\n\n## v0.10.0 - 2026-12-01\n\nCommit: " + sha2 + "\n\n## v0.9.1 - 2026-11-30\n\nCommit: " + sha1 + "\n", want: "0.10.0"},
		{name: "no release", content: "# Releases\n\n## Unreleased\n", wantErr: "lists no release"},
		{name: "not a record", content: "## v0.1.0\n", wantErr: "is not a release heading"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "RELEASES.md")
			if tc.content != "" {
				if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			v, err := olmbundle.CurrentVersion(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || v.String() != tc.want {
				t.Fatalf("CurrentVersion = %s, %v; want %s", v, err, tc.want)
			}
		})
	}
}

// TestUpgrade: a bundle replaces the newest released version older than
// itself, and skips the range from it.
func TestUpgrade(t *testing.T) {
	cases := []struct {
		name                string
		released            []string
		version             string
		replaces, skipRange string
	}{
		{name: "first release", version: "0.1.0"},
		{name: "first release, its directory written", released: []string{"0.1.0"}, version: "0.1.0"},
		{name: "next release", released: []string{"0.1.0"}, version: "0.2.0", replaces: "myoperator.v0.1.0", skipRange: ">=0.1.0 <0.2.0"},
		{name: "bundle/ at a released version", released: []string{"0.1.0", "0.2.0"}, version: "0.2.0", replaces: "myoperator.v0.1.0", skipRange: ">=0.1.0 <0.2.0"},
		{name: "numeric order", released: []string{"0.2.0", "0.9.0", "0.10.0"}, version: "0.11.0", replaces: "myoperator.v0.10.0", skipRange: ">=0.10.0 <0.11.0"},
		{name: "patch of an older line", released: []string{"0.1.0", "0.2.0"}, version: "0.1.1", replaces: "myoperator.v0.1.0", skipRange: ">=0.1.0 <0.1.1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := olmbundle.Upgrade(versions(t, tc.released...), versions(t, tc.version)[0])
			if g.Replaces() != tc.replaces || g.SkipRange() != tc.skipRange {
				t.Errorf("replaces %q skipRange %q, want %q %q", g.Replaces(), g.SkipRange(), tc.replaces, tc.skipRange)
			}
		})
	}
}

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]string{"0.1.0": "0.1.0", "v1.2.3": "1.2.3", "1.2.3-rc.1": "1.2.3-rc.1", "1.2": "", "1.2.3-rc.01": "", "v1.2.x": "", "": ""} {
		v, err := olmbundle.ParseVersion(in)
		if (err == nil) != (want != "") || (err == nil && v.String() != want) {
			t.Errorf("ParseVersion(%q) = %v, %v; want %q", in, v, err, want)
		}
	}
}

// TestReleaseCandidateInTheGraph: a candidate's bundle replaces the
// release before it, and the final release's bundle replaces the
// candidate.
func TestReleaseCandidateInTheGraph(t *testing.T) {
	released := versions(t, "0.1.0", "0.2.0", "0.3.0-rc.1")
	g := olmbundle.Upgrade(released, versions(t, "0.3.0")[0])
	if g.Previous == nil || g.Previous.String() != "0.3.0-rc.1" {
		t.Errorf("0.3.0 replaces %v, want 0.3.0-rc.1", g.Previous)
	}
	g = olmbundle.Upgrade(released[:2], versions(t, "0.3.0-rc.1")[0])
	if g.Previous == nil || g.Previous.String() != "0.2.0" {
		t.Errorf("0.3.0-rc.1 replaces %v, want 0.2.0", g.Previous)
	}
}

// withReleasedBundles is a temporary root whose bundle/releases holds a
// copy of the repository's frozen bundles of versions; it returns the root
// and that folder.
func withReleasedBundles(t *testing.T, versions ...string) (string, string) {
	t.Helper()
	root, err := testutil.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	releases := filepath.Join(tmp, "bundle", olmbundle.ReleasesDir)
	for _, v := range versions {
		if err := os.CopyFS(filepath.Join(releases, v), os.DirFS(filepath.Join(root, "bundle", olmbundle.ReleasesDir, v))); err != nil {
			t.Fatal(err)
		}
	}
	return tmp, releases
}

// TestWriteRelease writes a release's bundle beside a copy of v0.1.0's
// (make bundle-release VERSION=0.2.0), checks its CSV's place in the graph,
// and that a second run refuses to rewrite it.
func TestWriteRelease(t *testing.T) {
	tmp, releases := withReleasedBundles(t, "v0.1.0")
	if _, _, err := olmbundle.WriteRelease(tmp, "0.2.0"); err != nil {
		t.Fatal(err)
	}
	csv := &unstructured.Unstructured{Object: readYAML(t, filepath.Join(releases, "v0.2.0", "manifests", olmbundle.PackageName+".clusterserviceversion.yaml"))}
	replaces, _, _ := unstructured.NestedString(csv.Object, "spec", "replaces")
	version, _, _ := unstructured.NestedString(csv.Object, "spec", "version")
	if csv.GetName() != "myoperator.v0.2.0" || version != "0.2.0" || replaces != "myoperator.v0.1.0" || csv.GetAnnotations()["olm.skipRange"] != ">=0.1.0 <0.2.0" {
		t.Errorf("release CSV %s version %s replaces %q skipRange %q", csv.GetName(), version, replaces, csv.GetAnnotations()["olm.skipRange"])
	}
	if _, err := os.Stat(filepath.Join(releases, "v0.2.0", "metadata", "annotations.yaml")); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "bundle.Dockerfile")); err == nil {
		t.Error("a release wrote bundle.Dockerfile, which belongs to bundle/")
	}
	if _, _, err := olmbundle.WriteRelease(tmp, "0.2.0"); err == nil || !strings.Contains(err.Error(), "never rewritten") {
		t.Errorf("second WriteRelease(0.2.0): %v, want a refusal", err)
	}
}

// TestWriteDevelopment: make dist's bundle of a commit after the newest
// release replaces that release, although semver orders its version
// (a pre-release of the same number) before it, and skips no range; a
// released version is refused.
func TestWriteDevelopment(t *testing.T) {
	tmp, _ := withReleasedBundles(t, "v0.1.0", "v0.2.0")
	out := filepath.Join(tmp, "dev")
	if _, err := olmbundle.WriteDevelopment(tmp, "0.2.0-424-g274aa16", out); err != nil {
		t.Fatal(err)
	}
	csv := &unstructured.Unstructured{Object: readYAML(t, filepath.Join(out, "manifests", olmbundle.PackageName+".clusterserviceversion.yaml"))}
	replaces, _, _ := unstructured.NestedString(csv.Object, "spec", "replaces")
	version, _, _ := unstructured.NestedString(csv.Object, "spec", "version")
	if csv.GetName() != "myoperator.v0.2.0-424-g274aa16" || version != "0.2.0-424-g274aa16" || replaces != "myoperator.v0.2.0" {
		t.Errorf("development CSV %s version %s replaces %q, want myoperator.v0.2.0-424-g274aa16 replacing myoperator.v0.2.0", csv.GetName(), version, replaces)
	}
	if r, ok := csv.GetAnnotations()["olm.skipRange"]; ok {
		t.Errorf("development CSV skips %q, want no olm.skipRange", r)
	}
	if _, err := os.Stat(filepath.Join(out, "metadata", "annotations.yaml")); err != nil {
		t.Error(err)
	}
	if _, err := olmbundle.WriteDevelopment(tmp, "0.2.0", filepath.Join(tmp, "again")); err == nil || !strings.Contains(err.Error(), "is a release") {
		t.Errorf("WriteDevelopment(0.2.0): %v, want a refusal", err)
	}
}

// TestReleaseV010Frozen: bundle/releases/v0.1.0 is, byte for byte, the
// bundle the release commit 7a934a4 generated.
func TestReleaseV010Frozen(t *testing.T) {
	root, err := testutil.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	const commit = "7a934a4"
	dir := filepath.Join(root, "bundle", olmbundle.ReleasesDir, "v0.1.0")
	out, err := exec.Command("git", "-C", root, "ls-tree", "-r", "--name-only", commit, "bundle/manifests", "bundle/metadata").Output()
	if err != nil {
		t.Fatalf("git ls-tree %s: %v (a shallow clone lacks the release commit: git fetch --unshallow)", commit, err)
	}
	var want []string
	for _, f := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(f, "bundle/")
		want = append(want, rel)
		blob, err := exec.Command("git", "-C", root, "show", commit+":"+f).Output()
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil || !bytes.Equal(got, blob) {
			t.Errorf("%s differs from %s:%s (%v)", filepath.Join(dir, rel), commit, f, err)
		}
	}
	var have []string
	for _, sub := range []string{"manifests", "metadata"} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			have = append(have, sub+"/"+e.Name())
		}
	}
	if !reflect.DeepEqual(have, want) {
		t.Errorf("files %v, %s has %v", have, commit, want)
	}
}

// TestWithoutCertRights: the rotator's writes leave the CSV's rules, every
// other right stays.
func TestWithoutCertRights(t *testing.T) {
	rule := func(groups, resources, verbs []any, names ...any) map[string]any {
		r := map[string]any{"apiGroups": groups, "resources": resources, "verbs": verbs}
		if len(names) > 0 {
			r["resourceNames"] = names
		}
		return r
	}
	crdGroup := []any{"apiextensions.k8s.io"}
	cases := []struct {
		name     string
		in, want []any
	}{
		{
			name: "other rules untouched",
			in:   []any{rule([]any{""}, []any{"configmaps"}, []any{"get", "patch"})},
			want: []any{rule([]any{""}, []any{"configmaps"}, []any{"get", "patch"})},
		},
		{
			name: "reads of CRDs stay",
			in:   []any{rule(crdGroup, []any{"customresourcedefinitions"}, []any{"get", "list", "watch"})},
			want: []any{rule(crdGroup, []any{"customresourcedefinitions"}, []any{"get", "list", "watch"})},
		},
		{
			name: "CRD status stays, the CRD's writes go",
			in:   []any{rule(crdGroup, []any{"customresourcedefinitions", "customresourcedefinitions/status"}, []any{"patch", "update"}, "drinks.example.com")},
			want: []any{rule(crdGroup, []any{"customresourcedefinitions/status"}, []any{"patch", "update"}, "drinks.example.com")},
		},
		{
			name: "webhook configuration writes go",
			in: []any{rule([]any{"admissionregistration.k8s.io"}, []any{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"}, []any{"patch", "update"}, "a", "b"),
				rule([]any{"admissionregistration.k8s.io"}, []any{"mutatingwebhookconfigurations"}, []any{"get", "patch"})},
			want: []any{rule([]any{"admissionregistration.k8s.io"}, []any{"mutatingwebhookconfigurations"}, []any{"get"})},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := olmbundle.WithoutCertRights(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}

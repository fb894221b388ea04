package releases

import (
	"testing"

	"github.com/example/myoperator/test/framework/testutil"
)

func TestDistVersion(t *testing.T) {
	rec, err := ParseRecord(record("- a change.\n", release("v0.2.0", "2026-11-30", sha2), release("v0.1.0", "2026-11-29", sha1)))
	if err != nil {
		t.Fatal(err)
	}
	const sha3 = "274aa16274aa16274aa16274aa16274aa16274aa1"
	later := Tree{Head: sha3, Since: 424}
	atRelease := Tree{Head: sha2, AtRelease: true, Since: 0}
	withDist := func(_, target string) bool { return true }
	for _, tc := range []struct {
		name    string
		want    string
		tree    DistTree
		version string
		err     string
	}{
		{"no version: the tree's", "", DistTree{Tree: later}, "v0.2.0-424-g274aa16", ""},
		{"no version, changed: the tree's, dirty", "", DistTree{Tree: Tree{Head: sha3, Since: 424, Dirty: true}, CodeChanged: true}, "v0.2.0-424-g274aa16-dirty", ""},
		{"no version at the release: the release", "", DistTree{Tree: atRelease}, "v0.2.0", ""},
		{"the newest release from its own tree", "0.2.0", DistTree{Tree: atRelease}, "v0.2.0", ""},
		{"make release: just recorded, its files changed", "v0.2.0", DistTree{Tree: Tree{Head: sha2, AtRelease: true, Dirty: true}}, "v0.2.0", ""},
		{"the newest release from its tree with code changed", "0.2.0", DistTree{Tree: Tree{Head: sha2, AtRelease: true, Dirty: true}, CodeChanged: true},
			"", "v0.2.0 was released from HEAD (e39a2c9), but files other than the release record's have changed since (git status): make dist would pack this tree's code as v0.2.0. Its commit predates make dist"},
		{"the newest release from a later tree", "0.2.0", DistTree{Tree: later, HasTarget: withDist},
			"", "v0.2.0 was released from e39a2c9, and HEAD (274aa16) is not that tree: make dist would pack this tree's code as v0.2.0. Its files come from its own commit: git worktree add ../myoperator-v0.2.0 " + sha2 + " && make -C ../myoperator-v0.2.0 dist VERSION=0.2.0"},
		{"an older release, before make dist", "0.1.0", DistTree{Tree: later, HasTarget: func(c, target string) bool { return c != sha1 || target == "docker-build-multiarch" }},
			"", "v0.1.0 was released from 7a934a4, and HEAD (274aa16) is not that tree: make dist would pack this tree's code as v0.1.0. Its commit predates make dist: its images come from git worktree add ../myoperator-v0.1.0 " + sha1 + " && make -C ../myoperator-v0.1.0 docker-build-multiarch VERSION=v0.1.0, and its manifests from that tree's config/default"},
		{"an older release, even at the newest's tree", "0.1.0", DistTree{Tree: atRelease}, "", "v0.1.0 was released from 7a934a4"},
		{"a release with one image target only", "0.1.0", DistTree{Tree: later}, "", "make -C ../myoperator-v0.1.0 docker-build VERSION=v0.1.0, and"},
		{"a version no release has", "0.3.0", DistTree{Tree: later},
			"", "v0.3.0 is no release of the record: make dist never stamps a version that was not released from the tree. make release VERSION=0.3.0 records HEAD as v0.3.0 and writes its files; make dist without VERSION writes this tree's, as v0.2.0-424-g274aa16"},
		{"not a version", "latest", DistTree{Tree: later}, "", `"latest" is not a release version`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DistVersion(rec, tc.want, tc.tree)
			if testutil.CheckErr(t, err, tc.err) {
				return
			}
			if got != tc.version {
				t.Errorf("DistVersion = %q, want %q", got, tc.version)
			}
		})
	}
}

func TestOnlyReleaseFiles(t *testing.T) {
	for _, tc := range []struct {
		paths []string
		want  bool
	}{
		{nil, true},
		{[]string{"RELEASES.md", "Makefile", "config/manager/kustomization.yaml", "bundle/manifests/x.yaml", "bundle/releases/v0.3.0/metadata/annotations.yaml", "bundle.Dockerfile", "charts/myoperator/Chart.yaml"}, true},
		{[]string{"RELEASES.md", "main.go"}, false},
		{[]string{"config/manager/manager.yaml"}, false},
		{[]string{"bundlex"}, false},
	} {
		if got := OnlyReleaseFiles(tc.paths); got != tc.want {
			t.Errorf("OnlyReleaseFiles(%q) = %v, want %v", tc.paths, got, tc.want)
		}
	}
}

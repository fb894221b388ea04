package releases

import (
	"fmt"
	"strings"
)

// ReleaseFiles are the tracked files make release changes after it has
// recorded a release and before they are committed: the record, the image
// tag (config/manager, the Makefile's IMG), the bundles and the chart.
// Changes to these alone leave the tree the release's code.
var ReleaseFiles = []string{"RELEASES.md", "Makefile", "config/manager/kustomization.yaml", "bundle/", "bundle.Dockerfile", "charts/"}

// OnlyReleaseFiles reports whether every path is one of ReleaseFiles (or
// under one of its folders).
func OnlyReleaseFiles(paths []string) bool {
	for _, p := range paths {
		if !isReleaseFile(p) {
			return false
		}
	}
	return true
}

func isReleaseFile(p string) bool {
	for _, f := range ReleaseFiles {
		if p == f || (strings.HasSuffix(f, "/") && strings.HasPrefix(p, f)) {
			return true
		}
	}
	return false
}

// DistTree is what make dist needs to know of the work tree, besides the
// Tree relative to the newest release.
type DistTree struct {
	Tree
	// CodeChanged: tracked files other than ReleaseFiles differ from HEAD.
	CodeChanged bool
	// HasTarget reports whether a commit's tree has a make target (the
	// releases before make dist do not have it); nil: none has.
	HasTarget func(commit, target string) bool
}

// DistVersion is the version make dist writes the tree's files as, for the
// version asked for (empty: none). It never stamps this tree's code with
// a version that was not released from it:
//   - none asked: the tree's own version (Describe), a release's only when
//     the tree is that release's;
//   - the newest release, when HEAD's tree is the one it was recorded from
//     and nothing but the release's own files changed since (make release
//     writes the files right after it records the release);
//   - any other release, or a version no release has: refused, naming the
//     command that writes those files.
func DistVersion(rec *Record, want string, t DistTree) (string, error) {
	newest, ok := rec.Newest()
	if !ok {
		return "", fmt.Errorf("the record lists no release: make release VERSION=x.y.z records the first")
	}
	tree := Describe(newest, t.Tree)
	if want == "" {
		return tree, nil
	}
	v, err := ParseSemver(want)
	if err != nil {
		return "", err
	}
	for _, r := range rec.Releases {
		if r.Version != v {
			continue
		}
		if r == newest && t.AtRelease && !t.CodeChanged {
			return v.String(), nil
		}
		why := fmt.Sprintf("%s was released from %s, and HEAD (%s) is not that tree", v, short(r.Commit), short(t.Head))
		if r == newest && t.AtRelease {
			why = fmt.Sprintf("%s was released from HEAD (%s), but files other than the release record's have changed since (git status)", v, short(t.Head))
		}
		return "", fmt.Errorf("%s: make dist would pack this tree's code as %s. %s", why, v, releaseCommand(r, t.HasTarget))
	}
	return "", fmt.Errorf("%s is no release of the record: make dist never stamps a version that was not released from the tree. make release VERSION=%s records HEAD as %s and writes its files; make dist without VERSION writes this tree's, as %s",
		v, strings.TrimPrefix(v.String(), "v"), v, tree)
}

// releaseCommand says how to write release r's files from its own commit.
func releaseCommand(r Release, hasTarget func(commit, target string) bool) string {
	has := func(target string) bool { return hasTarget != nil && hasTarget(r.Commit, target) }
	dir := "../myoperator-" + r.Version.String()
	worktree := fmt.Sprintf("git worktree add %s %s", dir, r.Commit)
	if has("dist") {
		return fmt.Sprintf("Its files come from its own commit: %s && make -C %s dist VERSION=%s", worktree, dir, strings.TrimPrefix(r.Version.String(), "v"))
	}
	images := "docker-build"
	if has("docker-build-multiarch") {
		images = "docker-build-multiarch"
	}
	return fmt.Sprintf("Its commit predates make dist: its images come from %s && make -C %s %s VERSION=%s, and its manifests from that tree's config/default",
		worktree, dir, images, r.Version)
}

package releases

import (
	"fmt"
	"strings"
)

// Tree is what git says about the work tree, relative to the newest
// release's commit.
type Tree struct {
	// Head is the full commit checked out.
	Head string
	// AtRelease: HEAD's tree is the release commit's tree (the release
	// itself, or a later commit that changed nothing).
	AtRelease bool
	// Since counts the commits from the release commit to HEAD; -1 when
	// git cannot tell (a shallow clone without the release commit).
	Since int
	// Dirty: tracked files differ from HEAD.
	Dirty bool
}

// Describe is the version of a tree: the release's own version when the
// tree is the release's, otherwise git describe's form relative to the
// release, v0.1.0-<commits since>-g<short commit>, with -dirty for local
// changes. Every form is a valid image tag.
func Describe(newest Release, t Tree) string {
	var b strings.Builder
	b.WriteString(newest.Version.String())
	if !t.AtRelease {
		if t.Since >= 0 {
			fmt.Fprintf(&b, "-%d", t.Since)
		}
		fmt.Fprintf(&b, "-g%s", short(t.Head))
	}
	if t.Dirty {
		b.WriteString("-dirty")
	}
	return b.String()
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// Command version reads the release record (RELEASES.md) and git, and
// prints the work tree's version: the newest release's own version when
// HEAD's tree is that release's tree, otherwise
// v0.1.0-<commits since the release>-g<short commit>[-dirty]. make build
// stamps the binaries with it and images are tagged with it.
//
// With -newest it prints the newest release's version; with -cut X.Y.Z it
// records release X.Y.Z of HEAD in the record (make release), or with
// -dry-run only checks that it could. With -dist [X.Y.Z] it prints the
// version make dist writes the tree's files as, or refuses one that was
// not released from this tree (releases.DistVersion).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/example/myoperator/hack/releases"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "version:", err)
		os.Exit(1)
	}
}

func run() error {
	path := flag.String("record", "RELEASES.md", "The release record.")
	newest := flag.Bool("newest", false, "Print the newest release's version.")
	cut := flag.String("cut", "", "Record release X.Y.Z of HEAD's commit: the Unreleased notes become its section.")
	date := flag.String("date", time.Now().UTC().Format(time.DateOnly), "The release date, with -cut.")
	dryRun := flag.Bool("dry-run", false, "With -cut: check the version and the record, change nothing.")
	dist := flag.Bool("dist", false, "Print the version make dist writes this tree's files as: the release given as the argument, when it was released from this tree, or the tree's own without one; refuse any other.")
	flag.Parse()

	if *cut != "" {
		return cutRelease(*path, *cut, *date, *dryRun)
	}
	rec, err := releases.ReadRecord(*path)
	if err != nil {
		return err
	}
	latest, ok := rec.Newest()
	if !ok {
		return fmt.Errorf("%s records no release yet", *path)
	}
	if *newest {
		fmt.Println(latest.Version)
		return nil
	}
	tree, err := inspect(latest.Commit)
	if err != nil {
		return err
	}
	if *dist {
		return printDist(rec, flag.Arg(0), tree)
	}
	fmt.Println(releases.Describe(latest, tree))
	return nil
}

// printDist prints the version make dist may write for want, after asking
// git which tracked files changed and which commits have make dist.
func printDist(rec *releases.Record, want string, tree releases.Tree) error {
	t := releases.DistTree{Tree: tree, HasTarget: hasTarget}
	changed, err := git("diff", "HEAD", "--name-only")
	if err != nil {
		return err
	}
	t.CodeChanged = !releases.OnlyReleaseFiles(strings.Fields(changed))
	v, err := releases.DistVersion(rec, want, t)
	if err != nil {
		return err
	}
	fmt.Println(v)
	return nil
}

// hasTarget reports whether commit's tree has the make target: in its
// Makefile, or in make/*.mk since the Makefile was split.
func hasTarget(commit, target string) bool {
	files, err := git("ls-tree", "--name-only", commit, "Makefile", "make/")
	if err != nil {
		return false
	}
	for _, f := range strings.Fields(files) {
		if text, err := git("show", commit+":"+f); err == nil && strings.Contains("\n"+text, "\n"+target+":") {
			return true
		}
	}
	return false
}

func cutRelease(path, v, date string, dryRun bool) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	head, err := git("rev-parse", "HEAD")
	if err != nil {
		return err
	}
	out, r, err := releases.Cut(string(raw), v, date, head)
	if err != nil {
		return err
	}
	if dryRun {
		fmt.Printf("%s can be released from %s\n", r.Version, r.Commit)
		return nil
	}
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil { // a tracked text file, readable by all like the rest of the tree
		return err
	}
	fmt.Printf("%s: recorded %s - %s, commit %s\n", path, r.Version, r.Date, r.Commit)
	return nil
}

// inspect asks git where HEAD stands relative to the release commit.
func inspect(release string) (releases.Tree, error) {
	t := releases.Tree{Since: -1}
	var err error
	if t.Head, err = git("rev-parse", "HEAD"); err != nil {
		return t, err
	}
	headTree, err := git("rev-parse", "HEAD^{tree}")
	if err != nil {
		return t, err
	}
	// A shallow clone may not hold the release commit: the version then
	// lacks the count, and says so.
	if relTree, err := git("rev-parse", "--verify", "--quiet", release+"^{tree}"); err == nil {
		t.AtRelease = relTree == headTree
		count, err := git("rev-list", "--count", release+"..HEAD")
		if err != nil {
			return t, err
		}
		if t.Since, err = strconv.Atoi(count); err != nil {
			return t, fmt.Errorf("git rev-list --count: %w", err)
		}
	} else {
		fmt.Fprintf(os.Stderr, "version: release commit %s is not in this clone (shallow?): no commit count in the version\n", release)
	}
	// git status refreshes the index first, so a file merely touched is
	// not counted as a change (git diff-index alone would).
	status, err := git("status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return t, err
	}
	t.Dirty = status != ""
	return t, nil
}

func git(args ...string) (string, error) {
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(exit.Stderr)))
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

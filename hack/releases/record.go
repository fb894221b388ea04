package releases

import (
	"cmp"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// The release record (RELEASES.md) is Keep a Changelog: a "## Unreleased"
// section first, then one section per release, newest first, each opened by
// "## vX.Y.Z - YYYY-MM-DD" (vX.Y.Z-rc.N for a release candidate) and a
// "Commit: <40 hex>" line naming the commit whose tree the release was
// built from.
const (
	unreleasedHeading = "## Unreleased"
	commitPrefix      = "Commit: "
)

var (
	releaseHeading = regexp.MustCompile(`^## (\S+) - (\d{4}-\d{2}-\d{2})$`)
	fullSHA        = regexp.MustCompile(`^[0-9a-f]{40}$`)
	// semverRelease is MAJOR.MINOR.PATCH with an optional pre-release
	// (semver 2.0.0, section 9: dot-separated identifiers, numeric ones
	// without leading zeros). Build metadata (+...) names builds between
	// releases, never a release.
	semverRelease = regexp.MustCompile(`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)` +
		`(?:-((?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?$`)
)

// Semver is a release version: MAJOR.MINOR.PATCH, and for a release
// candidate a pre-release such as "rc.1" (v0.3.0-rc.1 comes before v0.3.0).
type Semver struct {
	Major, Minor, Patch int
	// Pre is the pre-release, without its "-"; empty for a final release.
	Pre string
}

// ParseSemver reads "1.2.3", "v1.2.3" or "v1.2.3-rc.1".
func ParseSemver(s string) (Semver, error) {
	m := semverRelease.FindStringSubmatch(s)
	if m == nil {
		return Semver{}, fmt.Errorf("%q is not a release version: want MAJOR.MINOR.PATCH or MAJOR.MINOR.PATCH-PRERELEASE, for example 0.2.0 or 0.3.0-rc.1 (semver, no build metadata)", s)
	}
	var core [3]int
	for i := range core {
		n, err := strconv.Atoi(m[i+1])
		if err != nil {
			return Semver{}, fmt.Errorf("%q: %w", s, err)
		}
		core[i] = n
	}
	return Semver{Major: core[0], Minor: core[1], Patch: core[2], Pre: m[4]}, nil
}

// String is the tag form, "v1.2.3" or "v1.2.3-rc.1".
func (v Semver) String() string {
	s := fmt.Sprintf("v%d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.Pre != "" {
		s += "-" + v.Pre
	}
	return s
}

// Prerelease reports whether v is a release candidate (or another
// pre-release) rather than a final release.
func (v Semver) Prerelease() bool { return v.Pre != "" }

// Compare orders versions by semver precedence: negative when v comes
// before w. The core compares numerically; a pre-release comes before the
// final release of its core, and pre-releases compare identifier by
// identifier (numbers numerically and before words, a shorter list first).
func (v Semver) Compare(w Semver) int {
	if c := cmp.Compare(v.Major, w.Major); c != 0 {
		return c
	}
	if c := cmp.Compare(v.Minor, w.Minor); c != 0 {
		return c
	}
	if c := cmp.Compare(v.Patch, w.Patch); c != 0 {
		return c
	}
	switch {
	case v.Pre == w.Pre:
		return 0
	case v.Pre == "":
		return 1
	case w.Pre == "":
		return -1
	}
	a, b := strings.Split(v.Pre, "."), strings.Split(w.Pre, ".")
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := compareIdentifier(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

// compareIdentifier compares two pre-release identifiers: numbers
// numerically and before words, words in ASCII order.
func compareIdentifier(a, b string) int {
	na, errA := strconv.Atoi(a)
	nb, errB := strconv.Atoi(b)
	switch {
	case errA == nil && errB == nil:
		return cmp.Compare(na, nb)
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// Less reports whether v comes before w.
func (v Semver) Less(w Semver) bool { return v.Compare(w) < 0 }

// Release is one section of the record.
type Release struct {
	Version Semver
	Date    string
	// Commit is the full commit whose tree the release was built from.
	Commit string
}

// Record is the release record, read.
type Record struct {
	// Releases, newest first.
	Releases []Release
	// Unreleased is the text of the Unreleased section, trimmed.
	Unreleased string
}

// Newest is the newest release, false when there is none.
func (r *Record) Newest() (Release, bool) {
	if len(r.Releases) == 0 {
		return Release{}, false
	}
	return r.Releases[0], true
}

// ParseRecord reads the record and checks what the tools rely on: the
// Unreleased section comes first, every release heading and commit line is
// well formed, no version appears twice, and versions descend.
func ParseRecord(text string) (*Record, error) {
	rec := &Record{}
	var (
		cur          *Release // the release whose section is being read
		unreleased   strings.Builder
		inUnreleased bool
		seenUnrel    bool
	)
	finish := func() error {
		if cur == nil {
			return nil
		}
		if cur.Commit == "" {
			return fmt.Errorf("release %s has no %q line", cur.Version, commitPrefix+"<full commit>")
		}
		rec.Releases = append(rec.Releases, *cur)
		cur = nil
		return nil
	}
	for n, line := range strings.Split(text, "\n") {
		where := fmt.Sprintf("line %d", n+1)
		line = strings.TrimRight(line, " \t\r")
		switch {
		case line == unreleasedHeading:
			if seenUnrel || cur != nil || len(rec.Releases) > 0 {
				return nil, fmt.Errorf("%s: %q must come once, before every release", where, unreleasedHeading)
			}
			seenUnrel, inUnreleased = true, true
		case strings.HasPrefix(line, "## "):
			if err := finish(); err != nil {
				return nil, err
			}
			inUnreleased = false
			m := releaseHeading.FindStringSubmatch(line)
			if m == nil {
				return nil, fmt.Errorf("%s: %q is not a release heading: want \"## vX.Y.Z - YYYY-MM-DD\" or \"## vX.Y.Z-rc.N - YYYY-MM-DD\"", where, line)
			}
			v, err := ParseSemver(m[1])
			if err != nil || !strings.HasPrefix(m[1], "v") {
				return nil, fmt.Errorf("%s: release heading %q: want the version as vX.Y.Z", where, line)
			}
			for _, r := range rec.Releases {
				switch {
				case r.Version == v:
					return nil, fmt.Errorf("%s: release %s appears twice", where, v)
				case r.Version.Less(v):
					return nil, fmt.Errorf("%s: release %s comes after the older %s: newest first", where, v, r.Version)
				}
			}
			cur = &Release{Version: v, Date: m[2]}
		case cur != nil && strings.HasPrefix(line, commitPrefix):
			sha := strings.TrimPrefix(line, commitPrefix)
			if cur.Commit != "" || !fullSHA.MatchString(sha) {
				return nil, fmt.Errorf("%s: release %s: want one %q line with the full 40-hex commit, got %q", where, cur.Version, commitPrefix, line)
			}
			cur.Commit = sha
		case inUnreleased:
			unreleased.WriteString(line + "\n")
		}
	}
	if err := finish(); err != nil {
		return nil, err
	}
	if !seenUnrel {
		return nil, fmt.Errorf("no %q section: the record starts with it, empty or not", unreleasedHeading)
	}
	rec.Unreleased = strings.TrimSpace(unreleased.String())
	return rec, nil
}

// ReadRecord reads and parses the record at path.
func ReadRecord(path string) (*Record, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rec, err := ParseRecord(string(raw))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rec, nil
}

package version

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// The release record (RELEASES.md) is Keep a Changelog: a "## Unreleased"
// section first, then one section per release, newest first, each opened by
// "## vX.Y.Z - YYYY-MM-DD" and a "Commit: <40 hex>" line naming the commit
// whose tree the release was built from.
const (
	unreleasedHeading = "## Unreleased"
	commitPrefix      = "Commit: "
)

var (
	releaseHeading = regexp.MustCompile(`^## (\S+) - (\d{4}-\d{2}-\d{2})$`)
	fullSHA        = regexp.MustCompile(`^[0-9a-f]{40}$`)
	semverCore     = regexp.MustCompile(`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)
)

// Semver is a release version, MAJOR.MINOR.PATCH. Releases carry no
// pre-release or build suffix: those name builds between releases.
type Semver [3]int

// ParseSemver reads "1.2.3" or "v1.2.3".
func ParseSemver(s string) (Semver, error) {
	m := semverCore.FindStringSubmatch(s)
	if m == nil {
		return Semver{}, fmt.Errorf("%q is not a release version: want MAJOR.MINOR.PATCH, for example 0.2.0 (semver, no pre-release suffix)", s)
	}
	var v Semver
	for i := range v {
		n, err := strconv.Atoi(m[i+1])
		if err != nil {
			return Semver{}, fmt.Errorf("%q: %w", s, err)
		}
		v[i] = n
	}
	return v, nil
}

// String is the tag form, "v1.2.3".
func (v Semver) String() string { return fmt.Sprintf("v%d.%d.%d", v[0], v[1], v[2]) }

// Less orders versions by major, minor, then patch.
func (v Semver) Less(w Semver) bool {
	for i := range v {
		if v[i] != w[i] {
			return v[i] < w[i]
		}
	}
	return false
}

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
				return nil, fmt.Errorf("%s: %q is not a release heading: want \"## vX.Y.Z - YYYY-MM-DD\"", where, line)
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

package version

import (
	"fmt"
	"strings"
)

// Cut records a new release in the record's text: the Unreleased section's
// notes become the section of version, dated date and naming commit, and a
// fresh, empty Unreleased section goes above it. It refuses a version that
// is not MAJOR.MINOR.PATCH, one already recorded, one not newer than the
// newest release, and a release with no notes.
func Cut(text, version, date, commit string) (string, Release, error) {
	v, err := ParseSemver(version)
	if err != nil {
		return "", Release{}, err
	}
	rec, err := ParseRecord(text)
	if err != nil {
		return "", Release{}, fmt.Errorf("reading the record: %w", err)
	}
	for _, r := range rec.Releases {
		if r.Version == v {
			return "", Release{}, fmt.Errorf("%s is already released (%s, commit %s): choose a version newer than %s", v, r.Date, r.Commit, rec.Releases[0].Version)
		}
	}
	if newest, ok := rec.Newest(); ok && !newest.Version.Less(v) {
		return "", Release{}, fmt.Errorf("%s is not newer than the newest release %s", v, newest.Version)
	}
	if !fullSHA.MatchString(commit) {
		return "", Release{}, fmt.Errorf("commit %q: want the full 40-hex commit", commit)
	}
	if !releaseHeading.MatchString("## " + v.String() + " - " + date) {
		return "", Release{}, fmt.Errorf("date %q: want YYYY-MM-DD", date)
	}
	if rec.Unreleased == "" {
		return "", Release{}, fmt.Errorf("the %q section is empty: write the release notes there first", unreleasedHeading)
	}
	r := Release{Version: v, Date: date, Commit: commit}
	heading := fmt.Sprintf("%s\n\n## %s - %s\n\n%s%s", unreleasedHeading, v, date, commitPrefix, commit)
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		if strings.TrimRight(line, " \t\r") == unreleasedHeading {
			lines[i] = heading
			break
		}
	}
	return strings.Join(lines, "\n"), r, nil
}

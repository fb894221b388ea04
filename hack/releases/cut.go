package releases

import (
	"fmt"
	"strings"
)

// Cut records a new release in the record's text: the Unreleased section's
// notes become the section of version, dated date and naming commit, and a
// fresh, empty Unreleased section goes above it. A release candidate
// (a pre-release version, 0.3.0-rc.1) copies the notes instead, so that
// the final release lists them too. It refuses a version that is not
// MAJOR.MINOR.PATCH[-PRERELEASE], one already recorded, one not newer than
// the newest release, and a release with no notes.
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
	heading := fmt.Sprintf("## %s - %s\n\n%s%s", v, date, commitPrefix, commit)
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		if strings.TrimRight(line, " \t\r") != unreleasedHeading {
			continue
		}
		if !v.Prerelease() {
			lines[i] = unreleasedHeading + "\n\n" + heading
			break
		}
		// A release candidate's section lists what it holds, and the
		// notes stay under Unreleased for the next candidate and the
		// final release, whose sections then list them all again.
		end := len(lines)
		for j := i + 1; j < len(lines); j++ {
			if strings.HasPrefix(lines[j], "## ") {
				end = j
				break
			}
		}
		notes := strings.TrimSpace(strings.Join(lines[i+1:end], "\n"))
		block := unreleasedHeading + "\n\n" + notes + "\n\n" + heading + "\n\n" + notes + "\n"
		if end < len(lines) {
			block += "\n" + strings.Join(lines[end:], "\n")
		}
		lines = append(lines[:i], block)
		break
	}
	return strings.Join(lines, "\n"), r, nil
}

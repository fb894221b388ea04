package releases

import (
	"cmp"
	"strings"
	"testing"

	"github.com/example/myoperator/test/framework/testutil"
)

const (
	sha1 = "7a934a4cab84dbd43fb8827f05ea9b113435956a"
	sha2 = "e39a2c9e39a2c9e39a2c9e39a2c9e39a2c9e39a2"
)

// record is a release record with the given Unreleased notes and releases
// (heading and commit line each).
func record(unreleased string, releases ...string) string {
	return "# Releases\n\nIntro.\n\n## Unreleased\n\n" + unreleased + "\n" + strings.Join(releases, "\n")
}

func release(v, date, commit string) string {
	return "## " + v + " - " + date + "\n\nCommit: " + commit + "\n\n### Added\n\n- Something.\n"
}

func TestParseRecord(t *testing.T) {
	for _, tc := range []struct {
		name       string
		text       string
		want       []Release
		unreleased string
		err        string
	}{
		{name: "no release yet", text: record("- A change.")},
		{name: "one release", text: record("", release("v0.1.0", "2026-11-30", sha1)), want: []Release{{Semver{Minor: 1}, "2026-11-30", sha1}}},
		{
			name: "newest first, unreleased notes kept", text: record("### Added\n\n- New.", release("v1.10.0", "2027-02-01", sha2), release("v1.9.3", "2026-11-30", sha1)),
			want:       []Release{{Semver{Major: 1, Minor: 10}, "2027-02-01", sha2}, {Semver{Major: 1, Minor: 9, Patch: 3}, "2026-11-30", sha1}},
			unreleased: "### Added\n\n- New.",
		},
		{name: "no Unreleased section", text: "# Releases\n\n" + release("v0.1.0", "2026-11-30", sha1), err: `no "## Unreleased" section`},
		{name: "Unreleased after a release", text: "# R\n\n" + release("v0.1.0", "2026-11-30", sha1) + "## Unreleased\n", err: "must come once, before every release"},
		{name: "missing commit", text: record("", "## v0.1.0 - 2026-11-30\n\n### Added\n"), err: "release v0.1.0 has no \"Commit: <full commit>\" line"},
		{name: "short commit", text: record("", release("v0.1.0", "2026-11-30", "7a934a4")), err: "full 40-hex commit"},
		{name: "two commits", text: record("", release("v0.1.0", "2026-11-30", sha1)+"Commit: "+sha2+"\n"), err: "want one \"Commit: \" line"},
		{name: "heading without date", text: record("", "## v0.1.0\n\nCommit: "+sha1+"\n"), err: `"## v0.1.0" is not a release heading`},
		{name: "version without v", text: record("", release("0.1.0", "2026-11-30", sha1)), err: "want the version as vX.Y.Z"},
		{name: "not semver", text: record("", release("v0.1", "2026-11-30", sha1)), err: "want the version as vX.Y.Z"},
		{name: "duplicate", text: record("", release("v0.1.0", "2026-11-30", sha1), release("v0.1.0", "2026-11-29", sha2)), err: "release v0.1.0 appears twice"},
		{name: "oldest first", text: record("", release("v0.1.0", "2026-11-30", sha1), release("v0.2.0", "2026-12-01", sha2)), err: "release v0.2.0 comes after the older v0.1.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := ParseRecord(tc.text)
			if testutil.CheckErr(t, err, tc.err) {
				return
			}
			if len(rec.Releases) != len(tc.want) {
				t.Fatalf("releases = %v, want %v", rec.Releases, tc.want)
			}
			for i := range tc.want {
				if rec.Releases[i] != tc.want[i] {
					t.Errorf("release %d = %+v, want %+v", i, rec.Releases[i], tc.want[i])
				}
			}
			if want := tc.unreleased; want != "" && rec.Unreleased != want {
				t.Errorf("unreleased = %q, want %q", rec.Unreleased, want)
			}
		})
	}
}

// The repository's own record reads, names v0.1.0 with its commit, and
// every later release is newer.
func TestRepositoryRecord(t *testing.T) {
	rec, err := ReadRecord("../../RELEASES.md")
	if err != nil {
		t.Fatal(err)
	}
	oldest := rec.Releases[len(rec.Releases)-1]
	if oldest.Version.String() != "v0.1.0" || oldest.Commit != sha1 {
		t.Errorf("oldest release = %+v, want v0.1.0 from %s", oldest, sha1)
	}
}

func TestDescribe(t *testing.T) {
	r := Release{Version: Semver{Minor: 1}, Commit: sha1}
	for _, tc := range []struct {
		name string
		tree Tree
		want string
	}{
		{"the release's tree", Tree{Head: sha1, AtRelease: true, Since: 0}, "v0.1.0"},
		{"a later commit, same tree", Tree{Head: sha2, AtRelease: true, Since: 3}, "v0.1.0"},
		{"the release's tree, changed", Tree{Head: sha1, AtRelease: true, Dirty: true}, "v0.1.0-dirty"},
		{"40 commits later", Tree{Head: sha2, Since: 40}, "v0.1.0-40-ge39a2c9"},
		{"40 commits later, changed", Tree{Head: sha2, Since: 40, Dirty: true}, "v0.1.0-40-ge39a2c9-dirty"},
		{"release commit not in a shallow clone", Tree{Head: sha2, Since: -1}, "v0.1.0-ge39a2c9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Describe(r, tc.tree); got != tc.want {
				t.Errorf("Describe = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseSemver(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"0.2.0", "v0.2.0", true},
		{"v1.12.3", "v1.12.3", true},
		{"1.2", "", false},
		{"01.2.3", "", false},
		{"1.2.3-rc.1", "v1.2.3-rc.1", true},
		{"v0.3.0-alpha.beta.7", "v0.3.0-alpha.beta.7", true},
		{"1.2.3-rc.01", "", false},
		{"1.2.3-", "", false},
		{"1.2.3-rc..1", "", false},
		{"v1.2.3+build", "", false},
		{"v1.2.3-rc.1+build", "", false},
		{"latest", "", false},
	} {
		v, err := ParseSemver(tc.in)
		if (err == nil) != tc.ok || (tc.ok && v.String() != tc.want) {
			t.Errorf("ParseSemver(%q) = %v, %v; want %q (ok %v)", tc.in, v, err, tc.want, tc.ok)
		}
	}
}

// TestSemverOrder: semver precedence, a release candidate before its final
// release, numeric identifiers numerically.
func TestSemverOrder(t *testing.T) {
	ordered := []string{"0.2.0", "0.3.0-alpha", "0.3.0-alpha.1", "0.3.0-alpha.beta", "0.3.0-beta.2", "0.3.0-beta.11", "0.3.0-rc.1", "0.3.0", "0.3.1", "0.10.0", "1.0.0-rc.1", "1.0.0"}
	for i := range ordered {
		for j := range ordered {
			a, err := ParseSemver(ordered[i])
			if err != nil {
				t.Fatal(err)
			}
			b, err := ParseSemver(ordered[j])
			if err != nil {
				t.Fatal(err)
			}
			if got, want := a.Compare(b), cmp.Compare(i, j); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func TestCut(t *testing.T) {
	one := record("### Fixed\n\n- A fix.", release("v0.1.0", "2026-11-30", sha1))
	for _, tc := range []struct {
		name, text, version, commit string
		err                         string
	}{
		{name: "next minor", text: one, version: "0.2.0", commit: sha2},
		{name: "with v", text: one, version: "v0.1.1", commit: sha2},
		{name: "first release", text: record("- First."), version: "0.1.0", commit: sha2},
		{name: "existing", text: one, version: "0.1.0", commit: sha2, err: "v0.1.0 is already released (2026-11-30, commit " + sha1 + "): choose a version newer than v0.1.0"},
		{name: "older", text: record("- X.", release("v0.2.0", "2026-12-01", sha2), release("v0.1.0", "2026-11-30", sha1)), version: "0.1.5", commit: sha2, err: "v0.1.5 is not newer than the newest release v0.2.0"},
		{name: "not semver", text: one, version: "0.2", commit: sha2, err: `"0.2" is not a release version`},
		{name: "short commit", text: one, version: "0.2.0", commit: "e39a2c9", err: "want the full 40-hex commit"},
		{name: "no notes", text: record("", release("v0.1.0", "2026-11-30", sha1)), version: "0.2.0", commit: sha2, err: "write the release notes there first"},
		{name: "release candidate", text: one, version: "0.2.0-rc.1", commit: sha2},
		{name: "final after its candidate", text: record("### Fixed\n\n- A fix.", release("v0.2.0-rc.1", "2026-12-01", sha2), release("v0.1.0", "2026-11-30", sha1)), version: "0.2.0", commit: sha2},
		{name: "candidate after its final", text: record("- X.", release("v0.2.0", "2026-12-01", sha2)), version: "0.2.0-rc.2", commit: sha2, err: "v0.2.0-rc.2 is not newer than the newest release v0.2.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, r, err := Cut(tc.text, tc.version, "2026-12-24", tc.commit)
			if testutil.CheckErr(t, err, tc.err) {
				return
			}
			rec, err := ParseRecord(out)
			if err != nil {
				t.Fatalf("the cut record does not read: %v\n%s", err, out)
			}
			if newest, _ := rec.Newest(); newest != r || newest.Commit != tc.commit || newest.Date != "2026-12-24" {
				t.Errorf("newest = %+v, returned %+v", newest, r)
			}
			before, err := ParseRecord(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			section := "## " + r.Version.String() + " - 2026-12-24\n\nCommit: " + tc.commit + "\n\n" + before.Unreleased
			if !strings.Contains(out, section) {
				t.Errorf("cut record lacks the section with the notes %q:\n%s", section, out)
			}
			// A candidate keeps the notes for the final release.
			wantUnreleased := ""
			if r.Version.Prerelease() {
				wantUnreleased = before.Unreleased
			}
			if rec.Unreleased != wantUnreleased {
				t.Errorf("Unreleased after the cut = %q, want %q", rec.Unreleased, wantUnreleased)
			}
		})
	}
}

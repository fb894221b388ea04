package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// headIs is the git diff of a repository whose HEAD is "head" and in which
// every other commit tested other code.
func headIs(commit string) ([]string, []string, error) {
	if commit == headSHA {
		return nil, nil, nil
	}
	return []string{"reconcile/drink.go"}, nil, nil
}

const (
	headSHA  = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	otherSHA = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// TestMutationProblems: a full run counts for HEAD only when it ran on a
// clean tree at HEAD's code with its control runs on and caught every
// patch, each at HEAD's code (a patch run again since, at that run's).
func TestMutationProblems(t *testing.T) {
	full := func(commit, control, dirty string, rows ...string) string {
		return "# make test-mutations (hack/mutations.sh, every patch; control runs without the mutation: " + control + ")\n" +
			"# commit " + commit + dirty + ", 2026-12-06T02:47:35Z, 2 cores, go1.27.3\n" + strings.Join(rows, "\n") +
			"\nmutations: 2, caught 2, not caught 0\n"
	}
	caught := func(name string) string {
		return "caught    " + name + " by ./reconcile/ ^TestX$ in 33s: x_test.go:1: want y"
	}
	patches := []string{"a", "b"}
	for _, tc := range []struct {
		name, results string
		want          []string // problems, each by a part of it; none when empty
	}{
		{name: "every patch caught at HEAD", results: full(headSHA, "on", "", caught("a"), caught("b"))},
		{name: "a patch survived", results: full(headSHA, "on", "", caught("a"), "SURVIVED  b: ./x/ ^TestY$ passed with the fix removed (m)"),
			want: []string{"b: SURVIVED, not caught"}},
		{name: "a patch the run lacks", results: full(headSHA, "on", "", caught("a")), want: []string{"b: not in the run"}},
		{name: "a patch that did not apply", results: full(headSHA, "on", "", caught("a"), "BROKEN    b: the patch does not apply to HEAD: error"),
			want: []string{"b: BROKEN, not caught"}},
		{name: "control runs off", results: full(headSHA, "off", "", caught("a"), caught("b")), want: []string{"control runs off"}},
		{name: "uncommitted changes", results: full(headSHA, "on", " (with uncommitted changes)", caught("a"), caught("b")),
			want: []string{"made with uncommitted changes"}},
		{name: "the full run tested other code", results: full(otherSHA, "on", "", caught("a"), caught("b")),
			want: []string{"does not count for 2 of the 2 patches: it tested bbbbbbbbbbbb, and code changed since: reconcile/drink.go"}},
		{
			name:    "a patch run again at HEAD after a full run of other code",
			results: strings.Replace(full(otherSHA, "on", "", caught("a"), caught("b")), "\ncaught", "\n# run again at commit "+headSHA+", 2026-12-07T00:00:00Z: b\ncaught", 1),
			want:    []string{"does not count for 1 of the 2 patches"},
		},
		{
			name:    "a patch run again on other code after a full run at HEAD",
			results: strings.Replace(full(headSHA, "on", "", caught("a"), caught("b")), "\ncaught", "\n# run again at commit "+otherSHA+", 2026-12-07T00:00:00Z: a\ncaught", 1),
			want:    []string{"a, run again: it tested bbbbbbbbbbbb"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, err := ParseMutations(tc.results)
			if err != nil {
				t.Fatal(err)
			}
			got := MutationProblems(run, patches, headIs)
			if len(got) != len(tc.want) {
				t.Fatalf("problems %q, want %d: %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %q, want one containing %q", got[i], w)
				}
			}
		})
	}
	if _, err := ParseMutations("caught    a by ./x/ ^TestX$ in 1s: y\n"); err == nil {
		t.Error("ParseMutations accepted a file with no header naming its commit")
	}
}

// TestReliabilityCovering: every suite needs its newest record at HEAD's
// code; an older record at HEAD does not stand in for a newer one of
// other code.
func TestReliabilityCovering(t *testing.T) {
	dir := t.TempDir()
	line := func(test, commit string) string {
		return `{"test":"` + test + `","date":"2026-12-01T00:00:00Z","commit":"` + commit + `","command":"go test","figures":{"seconds":1}}` + "\n"
	}
	for file, content := range map[string]string{
		"TestAtHead.jsonl":       line("TestAtHead", otherSHA) + line("TestAtHead", headSHA),
		"TestOlder.jsonl":        line("TestOlder", headSHA) + line("TestOlder", otherSHA),
		"TestAlsoOlder.jsonl":    line("TestAlsoOlder", otherSHA),
		"TestEmptyRecords.jsonl": "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	found, problems, err := ReliabilityCovering(dir, []string{"TestAtHead", "TestOlder", "TestAlsoOlder", "TestEmptyRecords", "TestNeverRun"}, headIs)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Test != "TestAtHead" {
		t.Errorf("found %+v, want TestAtHead's record alone", found)
	}
	want := []string{"TestEmptyRecords: none is recorded", "TestNeverRun: none is recorded",
		"TestOlder, TestAlsoOlder: it tested bbbbbbbbbbbb, and code changed since: reconcile/drink.go"}
	if strings.Join(problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
}

// TestBenchCovering: the newest make bench record decides, and one made on
// a dirty tree never counts.
func TestBenchCovering(t *testing.T) {
	dir := t.TempDir()
	line := func(commit string) string {
		return `{"Date":"2026-12-01T00:00:00Z","N":1000,"Command":"bin/bench -n 1000","Commit":"` + commit + `"}` + "\n"
	}
	for _, tc := range []struct {
		name, content, wantWhy string
	}{
		{name: "at HEAD", content: line(otherSHA) + line(headSHA)},
		{name: "none", content: "", wantWhy: "none is recorded"},
		{name: "dirty tree at HEAD", content: line(headSHA + "+dirty"), wantWhy: "uncommitted changes"},
		{name: "the newest tested other code", content: line(headSHA) + line(otherSHA), wantWhy: "it tested bbbbbbbbbbbb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".jsonl")
			if err := os.WriteFile(file, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			rec, why, err := BenchCovering(file, headIs)
			if err != nil {
				t.Fatal(err)
			}
			if (rec != nil) != (tc.wantWhy == "") || !strings.Contains(why, tc.wantWhy) {
				t.Errorf("BenchCovering = %+v, %q; want a record: %v, a reason containing %q", rec, why, tc.wantWhy == "", tc.wantWhy)
			}
		})
	}
}

package main

import (
	"strings"
	"testing"

	"github.com/example/myoperator/test/reliability"
)

func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		f    func(any) (string, error)
		in   any
		want string
	}{
		{number, 1798.0, "1,798"},
		{number, -1234567.0, "-1,234,567"},
		{number, 0.0, "0"},
		{number, 15.83, "15.8"},
		{duration, 56.94, "56.9 s"},
		{duration, 823.0, "13 min 43 s"},
	} {
		got, err := tc.f(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%v -> %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := number("12"); err == nil {
		t.Error("a string formatted as a number")
	}
}

// TestRenderRefusesWhatNoRunSaved: a row that reads a test without results,
// or a figure its run did not save, fails the rendering instead of
// printing nothing.
func TestRenderRefusesWhatNoRunSaved(t *testing.T) {
	recs := map[string][]reliability.Record{
		"TestA": {{Test: "TestA", Commit: "0123456789", Date: "2026-12-02T00:00:00Z", Figures: map[string]any{"writes": 77.0}}},
	}
	for _, tc := range []struct{ tmpl, want, err string }{
		{`{{ with last "TestA" }}{{ n (fig . "writes") }} at {{ at . }}{{ end }}`, "77 at `0123456`, 2026-12-02", ""},
		{`{{ with last "TestB" }}{{ end }}`, "", "no results for TestB"},
		{`{{ with last "TestA" }}{{ fig . "heap" }}{{ end }}`, "", `has no figure "heap"`},
	} {
		out, err := render(tc.tmpl, recs, "t.tmpl", "results")
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one with %q", tc.tmpl, err, tc.err)
		case tc.err == "" && (err != nil || !strings.HasSuffix(string(out), tc.want)):
			t.Errorf("%s: %q, %v; want it to end with %q", tc.tmpl, out, err, tc.want)
		}
	}
}

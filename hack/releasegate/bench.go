package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Bench is the part of a make bench record (one line of
// test/bench/results/quick.jsonl) that the gate reads: bin/bench writes
// the commit, "+dirty" when tracked files differed from it.
type Bench struct {
	Date    string
	N       int
	Command string
	Commit  string
}

// BenchCovering returns the newest record of file, or why it does not
// count for HEAD's code. The newest record decides.
func BenchCovering(file string, changed gitDiff) (*Bench, string, error) {
	recs, err := readJSONLines[Bench](file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, "", err
	}
	if len(recs) == 0 {
		return nil, "none is recorded", nil
	}
	newest := &recs[len(recs)-1]
	if commit, dirty := strings.CutSuffix(newest.Commit, "+dirty"); dirty || commit == "" {
		return nil, fmt.Sprintf("the newest, of %s, was made on a tree with uncommitted changes (or names no commit)", newest.Date), nil
	}
	if why := notHeadsCode(newest.Commit, changed); why != "" {
		return nil, "the newest does not count: " + why, nil
	}
	return newest, "", nil
}

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Reliability is the part of a record of test/reliability (one line of
// test/reliability/results/<test>.jsonl) that the gate reads. Save writes
// one only for a test that passed, on a clean tree.
type Reliability struct {
	Test    string `json:"test"`
	Date    string `json:"date"`
	Commit  string `json:"commit"`
	Command string `json:"command"`
}

// ReliabilityCovering returns, for each test of tests, its newest record,
// and the problems: the tests whose newest record is missing or tested
// other code. The newest record decides, as for the matrix.
func ReliabilityCovering(dir string, tests []string, changed gitDiff) (found []Reliability, problems []string, err error) {
	// Tests whose newest records tested the same other code share a line.
	var order []string
	stale := map[string][]string{}
	for _, test := range tests {
		recs, err := readJSONLines[Reliability](filepath.Join(dir, test+".jsonl"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, nil, err
		}
		if len(recs) == 0 {
			problems = append(problems, test+": none is recorded")
			continue
		}
		newest := recs[len(recs)-1]
		if why := notHeadsCode(newest.Commit, changed); why != "" {
			if stale[why] == nil {
				order = append(order, why)
			}
			stale[why] = append(stale[why], test)
			continue
		}
		found = append(found, newest)
	}
	for _, why := range order {
		problems = append(problems, fmt.Sprintf("%s: %s", strings.Join(stale[why], ", "), why))
	}
	return found, problems, nil
}

package doctor

import (
	"fmt"
	"io"
	"strings"
)

// Report is what doctor found; -o json and -o yaml print it as it is.
type Report struct {
	// Checks names every check that ran, in order.
	Checks   []string  `json:"checks"`
	Findings []Finding `json:"findings"`
	// Skipped are the Drinks the checks leave out on purpose.
	Skipped []Skipped `json:"skipped"`
	// Drinks and Webhooks count what was checked.
	Drinks   int `json:"drinks"`
	Webhooks int `json:"webhooks"`
}

// Skipped is a Drink the checks leave out, and why.
type Skipped struct {
	Object string `json:"object"`
	Reason string `json:"reason"`
}

// NewReport gathers the findings of the checks run on s.
func NewReport(s *State, findings []Finding) *Report {
	r := &Report{Checks: make([]string, len(Checks)), Findings: findings, Skipped: []Skipped{},
		Drinks: len(s.Drinks), Webhooks: len(s.Webhooks())}
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	for i, c := range Checks {
		r.Checks[i] = c.Name
	}
	for _, d := range s.Drinks {
		if why := s.Exempt(&d); why != "" {
			r.Skipped = append(r.Skipped, Skipped{Object: "drink/" + d.Namespace + "/" + d.Name, Reason: why})
		}
	}
	return r
}

// Print writes the findings, each with its fix, or a line saying every
// check passed; with the Drinks the checks left out on purpose.
func Print(w io.Writer, s *State, findings []Finding) {
	r := NewReport(s, findings)
	for _, k := range r.Skipped {
		fmt.Fprintf(w, "skipped   %s: %s\n", k.Object, k.Reason)
	}
	for _, f := range r.Findings {
		fmt.Fprintf(w, "FINDING   %s: %s %s\n          fix: %s\n", f.Check, f.Object, f.Problem, f.Fix)
	}
	if len(r.Findings) == 0 {
		fmt.Fprintf(w, "ok        %d checks, no finding (%s); %d Drinks, %d webhooks\n", len(r.Checks), strings.Join(r.Checks, ", "), r.Drinks, r.Webhooks)
		return
	}
	fmt.Fprintf(w, "%d finding(s) from %d checks (%s)\n", len(r.Findings), len(r.Checks), strings.Join(r.Checks, ", "))
}

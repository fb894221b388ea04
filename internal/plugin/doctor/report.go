package doctor

import (
	"fmt"
	"io"
	"strings"
)

// Print writes the findings, each with its fix, or a line saying every
// check passed; with the Drinks the checks left out on purpose.
func Print(w io.Writer, s *State, findings []Finding) {
	for _, d := range s.Drinks {
		if why := s.Exempt(&d); why != "" {
			fmt.Fprintf(w, "skipped   drink/%s/%s: %s\n", d.Namespace, d.Name, why)
		}
	}
	for _, f := range findings {
		fmt.Fprintf(w, "FINDING   %s: %s %s\n          fix: %s\n", f.Check, f.Object, f.Problem, f.Fix)
	}
	names := make([]string, len(Checks))
	for i, c := range Checks {
		names[i] = c.Name
	}
	if len(findings) == 0 {
		fmt.Fprintf(w, "ok        %d checks, no finding (%s); %d Drinks, %d webhooks\n", len(Checks), strings.Join(names, ", "), len(s.Drinks), len(s.Webhooks()))
		return
	}
	fmt.Fprintf(w, "%d finding(s) from %d checks (%s)\n", len(findings), len(Checks), strings.Join(names, ", "))
}

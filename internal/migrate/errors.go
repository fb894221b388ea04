package migrate

import (
	"fmt"
	"strings"
)

// maxNamed bounds how many failing Drinks an *Error names, and maxReason
// how long each reason may be, so that a condition message stays readable
// however many Drinks fail.
const (
	maxNamed  = 5
	maxReason = 300
)

// Failure is a Drink that could not be rewritten, and why.
type Failure struct {
	Namespace, Name string
	Err             error
}

// Error is the outcome of a listing in which some Drinks could not be
// rewritten: every other Drink was.
type Error struct {
	// Failures are in listing order (by namespace, then name).
	Failures []Failure
	// Total is how many Drinks the listing saw.
	Total int
}

// Error names the first failures with their reasons and counts the rest.
// It carries no timestamps or counters that change between attempts, so
// that a condition built from it changes only when the failures do.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d Drinks not rewritten: ", len(e.Failures), e.Total)
	for i, f := range e.Failures {
		if i == maxNamed {
			fmt.Fprintf(&b, "; and %d more", len(e.Failures)-maxNamed)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s/%s: %s", f.Namespace, f.Name, truncate(f.Err.Error(), maxReason))
	}
	return b.String()
}

// truncate shortens s to at most n runes, marking the cut.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

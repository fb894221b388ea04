package migrate

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestErrorMessage: the message names the first failing Drinks with their
// reasons and counts the rest, so that a condition stays short.
func TestErrorMessage(t *testing.T) {
	failures := func(n int, reason string) []Failure {
		var f []Failure
		for i := range n {
			f = append(f, Failure{Namespace: "ns", Name: fmt.Sprintf("d%d", i), Err: errors.New(reason)})
		}
		return f
	}
	long := strings.Repeat("x", 1000)
	for _, tc := range []struct {
		name string
		err  *Error
		want string
	}{
		{name: "one", err: &Error{Failures: failures(1, "denied"), Total: 2000},
			want: "1 of 2000 Drinks not rewritten: ns/d0: denied"},
		{name: "five named", err: &Error{Failures: failures(5, "denied"), Total: 9},
			want: "5 of 9 Drinks not rewritten: ns/d0: denied; ns/d1: denied; ns/d2: denied; ns/d3: denied; ns/d4: denied"},
		{name: "the rest counted", err: &Error{Failures: failures(8, "denied"), Total: 9},
			want: "8 of 9 Drinks not rewritten: ns/d0: denied; ns/d1: denied; ns/d2: denied; ns/d3: denied; ns/d4: denied; and 3 more"},
		{name: "long reason cut", err: &Error{Failures: failures(1, long), Total: 1},
			want: "1 of 1 Drinks not rewritten: ns/d0: " + long[:maxReason-1] + "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

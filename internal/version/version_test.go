package version

import (
	"strings"
	"testing"
)

const sha2 = "e39a2c9e39a2c9e39a2c9e39a2c9e39a2c9e39a2"

func TestString(t *testing.T) {
	defer func(v, c string) { Version, Commit = v, c }(Version, Commit)
	Version, Commit = "v0.1.0-40-ge39a2c9", sha2
	if got, want := String(), "myoperator v0.1.0-40-ge39a2c9 (commit "+sha2+")"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	Version = ""
	if got := String(); !strings.HasPrefix(got, "myoperator devel (commit ") {
		t.Errorf("unstamped String() = %q, want myoperator devel", got)
	}
}

package version

import (
	"fmt"
	"runtime/debug"
)

// Set at build time by make build, for example
//
//	-ldflags "-X github.com/example/myoperator/internal/version.Version=v0.1.0"
//
// A build without them (go run, go test) reports "devel" and the commit Go
// recorded from the work tree, when it did.
var (
	// Version is the release, or a git-describe style distance from the
	// newest release (v0.1.0-40-gabc1234), as hack/version prints it.
	Version = ""
	// Commit is the full commit the binary was built from.
	Commit = ""
)

// String names the program, its version and commit, for --version and the
// first log line: "myoperator v0.1.0-40-gabc1234 (commit abc1234...)".
func String() string {
	return fmt.Sprintf("myoperator %s (commit %s)", current(), commit())
}

func current() string {
	if Version == "" {
		return "devel"
	}
	return Version
}

// commit falls back to the revision that go build records from git
// (-buildvcs), so an unstamped binary still says what it was built from.
func commit() string {
	if Commit != "" {
		return Commit
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, modified := "unknown", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified {
		rev += "-dirty"
	}
	return rev
}

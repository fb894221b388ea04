package testutil

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FreeLoopbackPort is a port on 127.0.0.1 that nothing listens on right now,
// and not one of avoid (ports handed out before and not bound yet). It is
// taken below the kernel's ephemeral range (ip_local_port_range): a port
// from that range, free when picked, is also the source port the kernel
// gives the next outgoing connections, and a manager restarted on it after
// an API server restart (whose reconnections take many) failed to listen:
// "bind: address already in use".
func FreeLoopbackPort(avoid ...int) (int, error) {
	low := ephemeralLow()
	for range 100 {
		port := reservedFloor + rand.IntN(low-reservedFloor)
		if slices.Contains(avoid, port) {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // taken
		}
		_ = l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free port on 127.0.0.1 between %d and %d after 100 tries", reservedFloor, low)
}

// FreePort is FreeLoopbackPort for a test, which fails when there is none.
func FreePort(t testing.TB, avoid ...int) int {
	t.Helper()
	port, err := FreeLoopbackPort(avoid...)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// FreeAddr is "127.0.0.1:<FreePort>".
func FreeAddr(t testing.TB, avoid ...int) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t, avoid...)))
}

// reservedFloor is the lowest port FreeLoopbackPort picks: above the
// well-known and the usual registered ports of local services.
const reservedFloor = 20000

// ephemeralLow is the first port of the kernel's ephemeral range, 32768
// (Linux's default) when it cannot be read or leaves too little below it.
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 32768
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low < reservedFloor+1000 {
		return 32768
	}
	return low
}

// FindRepoRoot returns the directory that holds the project's go.mod,
// found from the working directory upwards (tests run in their package's
// directory). A go.mod of another module on the way (hack/tools's)
// is passed over: the root's is the one beside main.go.
func FindRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isRoot(dir) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod with a main.go beside it above the working directory")
		}
		dir = parent
	}
}

func isRoot(dir string) bool {
	for _, f := range []string{"go.mod", "main.go"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return false
		}
	}
	return true
}

// RepoRoot is FindRepoRoot for a test, which fails when there is none.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// IsWriteVerb says whether an audit or RBAC verb changes state.
func IsWriteVerb(verb string) bool {
	switch strings.ToLower(verb) {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// IsWriteMethod says whether an HTTP method of the Kubernetes API changes
// state; a GET is a get, list or watch.
func IsWriteMethod(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// CheckErr fails the test unless err contains want, or is nil when want
// is empty; it reports whether an error was expected, so that a table
// test's case ends there.
func CheckErr(t testing.TB, err error, want string) bool {
	t.Helper()
	switch {
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("err = %v, want one containing %q", err, want)
	case want == "" && err != nil:
		t.Fatal(err)
	}
	return want != ""
}

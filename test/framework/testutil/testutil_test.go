package testutil_test

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/example/myoperator/test/framework/testutil"
)

func TestFreePortIsFreeAndAvoids(t *testing.T) {
	first := testutil.FreePort(t)
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(first)))
	if err != nil {
		t.Fatalf("port %d was not free: %v", first, err)
	}
	defer func() { _ = l.Close() }()
	for range 50 {
		if p := testutil.FreePort(t, first); p == first {
			t.Fatalf("FreePort handed out %d, which it was told to avoid (and is bound)", p)
		}
	}
}

func TestRepoRootHoldsTheModule(t *testing.T) {
	root := testutil.RepoRoot(t)
	for _, f := range []string{"go.mod", "main.go", "test/framework/testutil/testutil.go"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestWriteClassification(t *testing.T) {
	for _, tc := range []struct {
		verb, method string
		write        bool
	}{
		{"get", "GET", false},
		{"list", "GET", false},
		{"watch", "GET", false},
		{"create", "POST", true},
		{"update", "PUT", true},
		{"patch", "PATCH", true},
		{"delete", "DELETE", true},
		{"deletecollection", "DELETE", true},
	} {
		if got := testutil.IsWriteVerb(tc.verb); got != tc.write {
			t.Errorf("IsWriteVerb(%q) = %v, want %v", tc.verb, got, tc.write)
		}
		if got := testutil.IsWriteMethod(tc.method); got != tc.write {
			t.Errorf("IsWriteMethod(%q) = %v, want %v", tc.method, got, tc.write)
		}
	}
}

package bench

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/example/myoperator/test/framework/testutil"
)

// echoName listens on loopback and answers each connection with name.
func echoName(t *testing.T, name string) (int, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte(name + "\n"))
			_ = c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, func() { _ = ln.Close() }
}

// TestWebhookServiceSendsToTheReplicasAdded: new connections to the
// Service's port go round the replicas added, none to one removed, and
// are refused when the Service is closed, as a Service's do as its
// endpoints come and go. It changes the NAT rules of the network namespace
// it runs in (make test runs it in hack/netns.sh's), on a port nothing
// else uses.
func TestWebhookServiceSendsToTheReplicasAdded(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing the network namespace's NAT rules needs root; make test runs as root")
	}
	a, stopA := echoName(t, "a")
	defer stopA()
	b, stopB := echoName(t, "b")
	defer stopB()
	port, err := testutil.FreeLoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	s, err := serveWebhooks(port)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	ask := func() (string, error) {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err != nil {
			return "", err
		}
		defer func() { _ = c.Close() }()
		line, err := bufio.NewReader(c).ReadString('\n')
		return strings.TrimSpace(line), err
	}
	answers := func(n int) map[string]int {
		seen := map[string]int{}
		for range n {
			got, err := ask()
			if err != nil {
				got = "refused"
			}
			seen[got]++
		}
		return seen
	}
	if got := answers(2); got["refused"] != 2 {
		t.Errorf("with no replica added: %v, want every connection refused", got)
	}
	for _, p := range []int{a, b} {
		if err := s.add(p); err != nil {
			t.Fatal(err)
		}
	}
	if got := answers(6); got["a"] != 3 || got["b"] != 3 {
		t.Errorf("with a and b added: %v, want 3 each (in turn)", got)
	}
	if err := s.remove(b); err != nil {
		t.Fatal(err)
	}
	if got := answers(3); got["a"] != 3 {
		t.Errorf("with b removed: %v, want a only", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := answers(2); got["refused"] != 2 {
		t.Errorf("with the Service closed: %v, want every connection refused", got)
	}
}

// TestWebhookServiceForgetsAnEarlierRunsConnections: a connection made
// through a Service whose table went away before it closed stays tracked
// as established for days, with the replica port it was sent to. A new
// Service on the same port must not let a connection from the same source
// port be taken for it (it would go where nothing listens any more:
// "connection refused"). The stale entry is made with conntrack -I, as
// connection tracking keeps one when it no longer sees the close.
func TestWebhookServiceForgetsAnEarlierRunsConnections(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing the network namespace's NAT rules needs root; make test runs as root")
	}
	var ports [3]int // the Service's, the client's source and the gone replica's
	for i := range ports {
		p, err := testutil.FreeLoopbackPort()
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = p
	}
	port, source, gone := ports[0], ports[1], ports[2]
	stale := exec.Command("conntrack", "-I", "-p", "tcp", "-s", "127.0.0.1", "-d", "127.0.0.1",
		"--sport", strconv.Itoa(source), "--dport", strconv.Itoa(port), "-r", "127.0.0.1", "-q", "127.0.0.1",
		"--reply-port-src", strconv.Itoa(gone), "--reply-port-dst", strconv.Itoa(source),
		"--state", "ESTABLISHED", "-u", "ASSURED", "-t", "600")
	if out, err := stale.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}

	a, stopA := echoName(t, "a")
	defer stopA()
	s, err := serveWebhooks(port)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if err := s.add(a); err != nil {
		t.Fatal(err)
	}
	d := net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: source}}
	c, err := d.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("connecting from the stale entry's source port: %v", err)
	}
	defer func() { _ = c.Close() }()
	if line, _ := bufio.NewReader(c).ReadString('\n'); line != "a\n" {
		t.Errorf("the connection answered %q, want a", line)
	}
}

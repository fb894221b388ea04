package bench

import (
	"bufio"
	"net"
	"strconv"
	"testing"
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

// TestWebhookServiceSkipsADownReplica: connections go round the replicas
// that listen, past one that does not (killed), as a Service's do past an
// endpoint that is gone.
func TestWebhookServiceSkipsADownReplica(t *testing.T) {
	a, stopA := echoName(t, "a")
	defer stopA()
	b, stopB := echoName(t, "b")
	down, stopDown := echoName(t, "down")
	stopDown()

	s, err := serveWebhooks(0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	port := s.ln.Addr().(*net.TCPAddr).Port
	ask := func() string {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		line, _ := bufio.NewReader(c).ReadString('\n')
		return line
	}
	s.add(a)
	s.add(down)
	s.add(b)
	seen := map[string]int{}
	for range 6 {
		seen[ask()]++
	}
	if seen["a\n"] == 0 || seen["b\n"] == 0 || len(seen) != 2 {
		t.Errorf("answers %v, want both a and b and nothing else", seen)
	}
	if s.Refused.Load() == 0 {
		t.Errorf("no dial to the down replica was counted")
	}

	// Removed from the Service, a replica gets no more connections.
	stopB()
	s.remove(b)
	s.remove(down)
	before := s.Refused.Load()
	for range 3 {
		if got := ask(); got != "a\n" {
			t.Errorf("answer %q after b and down were removed, want a", got)
		}
	}
	if n := s.Refused.Load() - before; n != 0 {
		t.Errorf("%d refused dials after removal, want 0", n)
	}
}

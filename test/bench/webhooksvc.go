package bench

import (
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// webhookService stands in, on loopback, for the webhook Service of an
// install with several replicas: it listens where config/local and the
// fence send the API server (WebhookPort) and passes each connection, TLS
// and all, to one of the running replicas' webhook servers in turn, as
// kube-proxy does for a Service's ready endpoints. Every replica serves the
// certificate of the one Secret, so any of them will do. A replica that
// refuses the connection (killed, or not listening yet) is skipped, so that
// the webhooks, and with them every create, do not depend on one replica
// staying up: before this, all admission went to the first replica, and a
// run whose first replica exited failed every write after it.
type webhookService struct {
	ln net.Listener

	mu    sync.Mutex
	ports []int
	next  int

	// Refused counts dials to a replica that failed (another was tried).
	Refused atomic.Int64
}

// serveWebhooks listens on 127.0.0.1:port (0 picks a free port).
func serveWebhooks(port int) (*webhookService, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return nil, err
	}
	s := &webhookService{ln: ln}
	go s.accept()
	return s, nil
}

// add and remove change the replicas' webhook ports the Service sends to;
// on a nil Service (the webhooks called directly) they do nothing.
func (s *webhookService) add(port int) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.ports, port) {
		s.ports = append(s.ports, port)
	}
}

func (s *webhookService) remove(port int) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ports = slices.DeleteFunc(s.ports, func(p int) bool { return p == port })
}

// order is the ports to try for the next connection, starting one further
// round each time.
func (s *webhookService) order() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.ports)
	out := make([]int, 0, n)
	for i := range n {
		out = append(out, s.ports[(s.next+i)%n])
	}
	s.next++
	return out
}

func (s *webhookService) accept() {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.pass(conn)
	}
}

func (s *webhookService) pass(conn net.Conn) {
	defer func() { _ = conn.Close() }()
	var backend net.Conn
	for _, port := range s.order() {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			backend = c
			break
		}
		s.Refused.Add(1)
	}
	if backend == nil {
		return
	}
	defer func() { _ = backend.Close() }()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		defer func() { done <- struct{}{} }()
		tc, _ := dst.(*net.TCPConn)
		if _, err := io.Copy(dst, src); err != nil && tc != nil {
			// src was reset (a killed replica's kernel resets the
			// connections with a request unread): reset dst too, as the
			// API server would see without a proxy between, so that it
			// retries the call as it does a reset one, not fails it as
			// it does one that ended early.
			_ = tc.SetLinger(0)
			_ = tc.Close()
			return
		}
		// Pass the half close on, so that the other side ends too.
		if tc != nil {
			_ = tc.CloseWrite()
		}
	}
	go pipe(backend, conn)
	go pipe(conn, backend)
	<-done
	<-done
}

// Close stops listening; connections under way end with their replicas.
// A nil Service (the webhooks called directly) has nothing to close.
func (s *webhookService) Close() error {
	if s == nil {
		return nil
	}
	err := s.ln.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

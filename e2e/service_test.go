//go:build e2e

package e2e

import (
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"time"
)

// serviceProxy stands in for the webhook Service on loopback: config/e2e
// points the API server at https://localhost:9443, and this proxy spreads
// connections over the operator pods' webhook ports, preferring ready pods
// as a Service's endpoints do. TLS passes through untouched, so the API
// server checks the operator's own serving certificate.
type serviceProxy struct {
	ln        net.Listener
	endpoints func() (ready, rest []int)
	next      atomic.Uint32
}

func startServiceProxy(addr string, endpoints func() (ready, rest []int)) (*serviceProxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &serviceProxy{ln: ln, endpoints: endpoints}
	go s.serve()
	return s, nil
}

func (s *serviceProxy) Close() error { return s.ln.Close() }

func (s *serviceProxy) serve() {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.handle(conn)
	}
}

// handle connects the client to the first endpoint that answers, starting
// at a rotating offset among the ready ones.
func (s *serviceProxy) handle(conn net.Conn) {
	ready, rest := s.endpoints()
	n := int(s.next.Add(1))
	var order []int
	for i := range ready {
		order = append(order, ready[(n+i)%len(ready)])
	}
	order = append(order, rest...)
	for _, port := range order {
		backend, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
		if err != nil {
			continue
		}
		done := make(chan struct{}, 2)
		pipe := func(dst, src net.Conn) {
			_, _ = io.Copy(dst, src)
			if tc, ok := dst.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			done <- struct{}{}
		}
		go pipe(backend, conn)
		go pipe(conn, backend)
		<-done
		<-done
		backend.Close()
		conn.Close()
		return
	}
	conn.Close()
}

package podrunner

import (
	"errors"
	"net"
	"strconv"
	"sync/atomic"
	"time"
)

// ServiceProxy stands in for a Service on loopback: config/e2e points the
// API server's webhook calls at https://localhost:9443, and this proxy
// spreads connections over the operator pods' webhook ports, preferring
// ready pods as a Service's endpoints do. It forwards TCP, so TLS passes
// through untouched and the API server checks the operator's own serving
// certificate.
type ServiceProxy struct {
	ln        net.Listener
	endpoints func() (ready []int)
	next      atomic.Uint32
}

// StartServiceProxy listens on addr and forwards each connection to a port
// that endpoints returns (for example Runner.Endpoints of the webhook
// port), until Close.
func StartServiceProxy(addr string, endpoints func() (ready []int)) (*ServiceProxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &ServiceProxy{ln: ln, endpoints: endpoints}
	go s.serve()
	return s, nil
}

// Close stops accepting connections; those open finish on their own.
func (s *ServiceProxy) Close() error { return s.ln.Close() }

// serve accepts until Close. Other accept errors (too many open files)
// pass: a long-running proxy waits a moment and accepts again.
func (s *ServiceProxy) serve() {
	for {
		conn, err := s.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		go s.handle(conn)
	}
}

// handle connects the client to one ready endpoint, chosen in turn, as a
// Service's proxy does: when that endpoint refuses, the client's
// connection fails too, as with kube-proxy, instead of quietly going to
// another endpoint (which would hide a pod marked Ready before it serves).
// With no ready endpoint the connection is refused, as kube-proxy rejects
// it: a pod that runs but is not Ready gets no traffic. (An earlier
// version fell back to such pods, and that hid a deadlock that a real
// Service shows: readiness that waited for the conversion webhook.)
func (s *ServiceProxy) handle(conn net.Conn) {
	ready := s.endpoints()
	if len(ready) == 0 {
		conn.Close()
		return
	}
	n := int(s.next.Add(1))
	order := []int{ready[n%len(ready)]}
	for _, port := range order {
		backend, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
		if err != nil {
			continue
		}
		splice(conn, backend)
		return
	}
	conn.Close()
}

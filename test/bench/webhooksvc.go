package bench

import (
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/example/myoperator/test/kubeproxy"
)

// webhookService stands in, on loopback, for the webhook Service of an
// install with several replicas, and does it where kube-proxy does: in the
// kernel. A NAT rule (nftables, in the network namespace the bench runs
// in) sends each new connection to 127.0.0.1 on the Service's port (where
// config/local and the fence send the API server: WebhookPort) to the next
// of the ready replicas' webhook ports in turn; the connection's later
// packets follow it there, TLS and all. Every replica serves the
// certificate of the one Secret, so any of them will do. Without it all
// admission would go to one replica, and a run whose replica exited would
// fail every write after it.
//
// The bench adds a replica once it is ready and removes it before it ends
// one (and, for an exit it did not ask for, as soon as it sees it), as
// the endpoints of a Service follow its pods' readiness. It used to be a
// proxy in the bench process that copied every byte of every webhook call
// on the same two cores the API server and the replicas run on: one
// replica at 50,000 Drinks converged in 471.0 s through it and in 366.6 s
// with the API server calling its webhooks directly (docs/BENCHMARKS.md).
type webhookService struct {
	port  int
	table string

	mu    sync.Mutex
	ports []int
}

// serveWebhooks makes the NAT table of the Service on 127.0.0.1:port,
// with no replica behind it yet (a connection is refused until one is
// added). It needs nft, conntrack and the right to change the network
// namespace's rules (root).
func serveWebhooks(port int) (*webhookService, error) {
	for _, tool := range []string{"nft", "conntrack"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("the bench's webhook Service needs nft and conntrack (Debian's packages nftables and conntrack; hack/ensure-nat-tools.sh): %w", err)
		}
	}
	s := &webhookService{port: port, table: "myoperator-bench-webhooks-" + strconv.Itoa(port)}
	// A table left by a bench that was killed would send this run's
	// connections to its replicas' ports.
	_ = kubeproxy.NFT("delete table ip " + s.table + "\n")
	script := fmt.Sprintf("add table ip %[1]s\nadd chain ip %[1]s out { type nat hook output priority -100; policy accept; }\n", s.table)
	if err := kubeproxy.NFT(script); err != nil {
		return nil, err
	}
	// Connection tracking keeps what it saw of connections to the port
	// made through an earlier run's table, each with the replica port
	// it was sent to: those it did not see close (the table was gone
	// first) stay "established" for days. A new connection from the same
	// source port is taken for one of them and sent to that replica's
	// port, where nothing listens now ("connection refused": 3 and 1 of
	// 50,000 creates in the first two runs). Forget them all.
	if err := s.forget(); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// forget deletes the tracked connections to the Service's port.
func (s *webhookService) forget() error {
	return kubeproxy.Forget(netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(s.port)))
}

// add and remove change the replicas' webhook ports the Service sends
// new connections to; on a nil Service (the webhooks called directly)
// they do nothing.
func (s *webhookService) add(port int) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Contains(s.ports, port) {
		return nil
	}
	s.ports = append(s.ports, port)
	return s.apply()
}

func (s *webhookService) remove(port int) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.ports)
	s.ports = slices.DeleteFunc(s.ports, func(p int) bool { return p == port })
	if len(s.ports) == n {
		return nil
	}
	// The connections already sent to it stay with it, as kube-proxy
	// leaves a TCP connection to an endpoint that is gone: a replica
	// ended with SIGTERM drains the calls under way, one killed resets
	// them, and connection tracking sees either end.
	return s.apply()
}

// apply replaces the chain's rule with one for s.ports, in one
// transaction: a connection made meanwhile sees the old rule or the new.
func (s *webhookService) apply() error {
	var b strings.Builder
	fmt.Fprintf(&b, "flush chain ip %s out\n", s.table)
	if len(s.ports) > 0 {
		to := make([]string, len(s.ports))
		for i, p := range s.ports {
			to[i] = fmt.Sprintf("%d : 127.0.0.1 . %d", i, p)
		}
		fmt.Fprintf(&b, "add rule ip %s out ip daddr 127.0.0.1 tcp dport %d dnat to numgen inc mod %d map { %s }\n",
			s.table, s.port, len(s.ports), strings.Join(to, ", "))
	}
	return kubeproxy.NFT(b.String())
}

// Close removes the Service's table and forgets the connections it
// tracked, so that a later run does not meet them; the bench closes it
// after its replicas have ended. A nil Service (the webhooks called
// directly) has nothing to close.
func (s *webhookService) Close() error {
	if s == nil {
		return nil
	}
	return errors.Join(kubeproxy.NFT("delete table ip "+s.table+"\n"), s.forget())
}

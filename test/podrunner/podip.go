package podrunner

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// podAddress gives a pod its IP, as a kubelet's CNI plugin does, on the
// host network the runner's containers share: once the cluster has set
// status.podIP (kwok does, from the node's pod CIDR), the runner adds that
// address to the loopback device of the network namespace it runs in and
// forwards each of the pod's container ports at that address to the
// pod's host port. A Service's endpoints then name addresses that answer:
// kube-apiserver with --enable-aggregator-routing calls a webhook Service
// at its ready endpoints (pod IP and target port), as it does wherever it
// cannot route ClusterIPs, and the webhooks are wired as in production.
type podAddress struct {
	ip        string
	listeners []net.Listener
	release   func() // gives the address back (Runner.holdIP)
}

// exposePodIP gives rp its pod IP when the cluster has set one and the
// runner has not yet. It is called from sync, which retries on the next
// tick when it fails.
func (r *Runner) exposePodIP(p *corev1.Pod, rp *runningPod) {
	if !r.cfg.PodIPs || p.Status.PodIP == "" || p.Spec.HostNetwork {
		return
	}
	rp.mu.Lock()
	done := rp.addr != nil
	rp.mu.Unlock()
	if done {
		return
	}
	addr, err := r.listenPodIP(rp, p.Status.PodIP)
	if err != nil {
		r.cfg.Logf("pod runner: %s: pod IP %s: %v", p.Name, p.Status.PodIP, err)
		return
	}
	rp.mu.Lock()
	rp.addr = addr
	rp.mu.Unlock()
	r.cfg.Logf("pod runner: %s: pod IP %s serves the container ports", p.Name, addr.ip)
}

// listenPodIP adds ip to the loopback device and listens on it at every
// container port of rp, forwarding to the matching host port.
func (r *Runner) listenPodIP(rp *runningPod, ip string) (*podAddress, error) {
	if net.ParseIP(ip) == nil {
		return nil, fmt.Errorf("not an IP address")
	}
	if err := r.holdIP(ip); err != nil {
		return nil, err
	}
	addr := &podAddress{ip: ip, release: func() { r.releaseIP(ip) }}
	for i := range rp.pod.Spec.Containers {
		c := &rp.pod.Spec.Containers[i]
		for _, cp := range c.Ports {
			hp, _ := r.hostPort(rp, c, intstr.FromInt32(cp.ContainerPort))
			ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(int(cp.ContainerPort))))
			if err != nil {
				addr.close()
				return nil, err
			}
			addr.listeners = append(addr.listeners, ln)
			go forwardAll(ln, hp)
		}
	}
	return addr, nil
}

// close stops the pod's listeners and gives its address back, when the
// pod stops: a kubelet tears its network down.
func (a *podAddress) close() {
	for _, ln := range a.listeners {
		_ = ln.Close()
	}
	a.release()
}

// holdIP puts ip on the loopback device unless another pod of the runner
// already holds it, and counts one more holder. An address that is there
// already (left by a runner that was killed) is taken over.
func (r *Runner) holdIP(ip string) error {
	r.ipMu.Lock()
	defer r.ipMu.Unlock()
	if r.ips[ip] == 0 {
		// iproute2 words "already there" differently across versions
		// ("File exists", "Address already assigned"): ask the device.
		if err := ipAddr("add", ip); err != nil && !onLoopback(ip) {
			return err
		}
	}
	r.ips[ip]++
	return nil
}

// releaseIP counts one holder of ip less and takes the address off the
// loopback device when none is left.
func (r *Runner) releaseIP(ip string) {
	r.ipMu.Lock()
	defer r.ipMu.Unlock()
	if r.ips[ip]--; r.ips[ip] > 0 {
		return
	}
	delete(r.ips, ip)
	_ = ipAddr("del", ip)
}

// onLoopback says whether ip is an address of the loopback device.
func onLoopback(ip string) bool {
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		return false
	}
	addrs, err := lo.Addrs()
	if err != nil {
		return false
	}
	want := net.ParseIP(ip)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(want) {
			return true
		}
	}
	return false
}

// ipAddr adds or deletes ip as a host address on the loopback device.
func ipAddr(op, ip string) error {
	bits := "/32"
	if strings.Contains(ip, ":") {
		bits = "/128"
	}
	out, err := exec.Command("ip", "addr", op, ip+bits, "dev", "lo").CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip addr %s %s dev lo: %w: %s", op, ip+bits, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// forwardAll forwards each connection accepted on ln to the host port
// until ln is closed; a connection the port refuses is closed, as a pod
// that does not listen refuses it.
func forwardAll(ln net.Listener, hostPort int) {
	for {
		conn, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		go func() {
			backend, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(hostPort)), time.Second)
			if err != nil {
				_ = conn.Close()
				return
			}
			splice(conn, backend)
		}()
	}
}

// splice copies both ways between a and b until both sides are done, and
// closes them.
func splice(a, b net.Conn) {
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(a, b)
	go pipe(b, a)
	<-done
	<-done
	_ = a.Close()
	_ = b.Close()
}

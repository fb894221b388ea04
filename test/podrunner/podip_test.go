package podrunner

import (
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A pod's IP serves its container ports, each forwarded to the pod's host
// port, until the pod stops. kwok gives a freed IP to the next pod at once:
// while an old and a new pod hold the same IP, the old one stopping leaves
// the new one serving, and the address leaves the loopback device with the
// last of them. It needs root in a network namespace of its own (make test
// runs the tests in one).
func TestPodIPServesContainerPorts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("adding a pod IP to the loopback device needs root (make test runs this as root in its network namespace)")
	}
	// Free host ports: slot s maps a pod's i-th port to base+100*s+i.
	base := 0
	for p := 40000; p < 41000 && base == 0; p += 2 {
		free := true
		for _, port := range []int{p, p + 1, p + 100} {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
			if err != nil {
				free = false
				continue
			}
			ln.Close()
		}
		if free {
			base = p
		}
	}
	answer := func(port int, name string) {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_, _ = io.WriteString(c, name)
				c.Close()
			}
		}()
	}
	answer(base, "webhook")
	answer(base+1, "metrics")
	answer(base+100, "new pod")

	r := &Runner{cfg: Config{HostPortBase: base, PodIPs: true}, ips: map[string]int{}}
	rp := &runningPod{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Ports: []corev1.ContainerPort{
			{Name: "webhook", ContainerPort: 9443}, {Name: "metrics", ContainerPort: 8443},
		}}}},
	}}
	const ip = "10.246.0.7" // apart from the suite's (10.244/16) and the demo's (10.245/16)
	addr, err := r.listenPodIP(rp, ip)
	if err != nil {
		t.Fatal(err)
	}
	call := func(port string) (string, error) {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, port), time.Second)
		if err != nil {
			return "", err
		}
		defer c.Close()
		b, err := io.ReadAll(c)
		return string(b), err
	}
	for _, tc := range []struct{ port, want string }{{"9443", "webhook"}, {"8443", "metrics"}} {
		got, err := call(tc.port)
		if err != nil || got != tc.want {
			t.Errorf("%s:%s answered %q (%v), want %q", ip, tc.port, got, err, tc.want)
		}
	}
	// A new pod given the same IP while the old one still stops.
	newer := &runningPod{slot: 1, pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}},
	}}
	newAddr, err := r.listenPodIP(newer, ip)
	if err != nil {
		t.Fatal(err)
	}
	onLo := func() bool {
		out, err := exec.Command("ip", "-o", "addr", "show", "dev", "lo").CombinedOutput()
		if err != nil {
			t.Fatalf("ip addr show: %v: %s", err, out)
		}
		return strings.Contains(string(out), " "+ip+"/32 ")
	}
	addr.close()
	if got, err := call("9443"); err == nil {
		t.Errorf("after the old pod stopped, %s:9443 still answered %q", ip, got)
	}
	if got, err := call("8080"); err != nil || got != "new pod" {
		t.Errorf("after the old pod stopped, the new pod's %s:8080 answered %q (%v), want %q", ip, got, err, "new pod")
	}
	newAddr.close()
	if onLo() {
		t.Errorf("after both pods stopped, the loopback device still has %s", ip)
	}

	// An address a killed runner left on the device is taken over, not
	// refused: iproute2 says "Address already assigned" (or "File
	// exists") to the add, and the pod must still serve at its IP.
	if err := ipAddr("add", ip); err != nil {
		t.Fatal(err)
	}
	left, err := r.listenPodIP(newer, ip)
	if err != nil {
		t.Fatalf("a pod IP already on the loopback device: %v, want it taken over", err)
	}
	if got, err := call("8080"); err != nil || got != "new pod" {
		t.Errorf("at a taken-over address, %s:8080 answered %q (%v), want %q", ip, got, err, "new pod")
	}
	left.close()
	if onLo() {
		t.Errorf("after the pod at the taken-over address stopped, the loopback device still has %s", ip)
	}
}

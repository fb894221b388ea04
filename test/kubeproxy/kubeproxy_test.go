package kubeproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/example/myoperator/test/framework/testenv"
)

func service(namespace, name, clusterIP string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       corev1.ServiceSpec{ClusterIP: clusterIP, Ports: ports},
	}
}

func servicePort(name string, proto corev1.Protocol, port int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Protocol: proto, Port: port}
}

func endpointSlice(namespace, svc string, family discoveryv1.AddressType, ports []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: namespace, Name: svc + "-" + string(family), Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: family,
		Ports:       ports,
		Endpoints:   eps,
	}
}

func slicePortOf(name string, proto corev1.Protocol, port int32) discoveryv1.EndpointPort {
	return discoveryv1.EndpointPort{Name: ptr.To(name), Protocol: ptr.To(proto), Port: ptr.To(port)}
}

// endpoint is an endpoint at addr with the given conditions (nil: unset).
func endpoint(addr string, ready, serving, terminating *bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{
		Addresses:  []string{addr},
		Conditions: discoveryv1.EndpointConditions{Ready: ready, Serving: serving, Terminating: terminating},
	}
}

var (
	yes = ptr.To(true)
	no  = ptr.To(false)
)

// describe writes frontends as "clusterIP:port -> endpoints", or
// "-> reject", for a readable diff.
func describe(fs []frontend) []string {
	var out []string
	for _, f := range fs {
		to := "reject"
		if len(f.endpoints) > 0 {
			eps := make([]string, len(f.endpoints))
			for i, ep := range f.endpoints {
				eps[i] = ep.String()
			}
			to = strings.Join(eps, " ")
		}
		out = append(out, fmt.Sprintf("%s:%d -> %s", f.ip, f.port, to))
	}
	return out
}

// TestFrontends: which ClusterIP ports the table has and where each sends
// new connections, as kube-proxy chooses.
func TestFrontends(t *testing.T) {
	web := []discoveryv1.EndpointPort{slicePortOf("http", corev1.ProtocolTCP, 8080)}
	httpPort := servicePort("http", corev1.ProtocolTCP, 80)
	tests := []struct {
		name     string
		services []*corev1.Service
		slices   []*discoveryv1.EndpointSlice
		want     []string
	}{{
		name:     "ready endpoints, a nil ready counting as ready",
		services: []*corev1.Service{service("ns", "web", "10.0.0.10", httpPort)},
		slices: []*discoveryv1.EndpointSlice{endpointSlice("ns", "web", discoveryv1.AddressTypeIPv4, web,
			endpoint("10.244.0.2", yes, yes, no),
			endpoint("10.244.0.1", nil, nil, nil),
			endpoint("10.244.0.3", no, no, no),
			endpoint("10.244.0.4", no, yes, yes), // terminating: not while another is ready
		)},
		want: []string{"10.0.0.10:80 -> 10.244.0.1:8080 10.244.0.2:8080"},
	}, {
		name:     "none ready: the serving terminating ones",
		services: []*corev1.Service{service("ns", "web", "10.0.0.10", httpPort)},
		slices: []*discoveryv1.EndpointSlice{endpointSlice("ns", "web", discoveryv1.AddressTypeIPv4, web,
			endpoint("10.244.0.1", no, yes, yes),
			endpoint("10.244.0.2", no, no, yes),
			endpoint("10.244.0.3", no, nil, yes), // serving follows ready when nil
			endpoint("10.244.0.4", no, yes, nil), // not terminating
		)},
		want: []string{"10.0.0.10:80 -> 10.244.0.1:8080"},
	}, {
		name:     "no endpoint serving, no slice: refused",
		services: []*corev1.Service{service("ns", "web", "10.0.0.10", httpPort), service("ns", "lonely", "10.0.0.11", httpPort)},
		slices: []*discoveryv1.EndpointSlice{endpointSlice("ns", "web", discoveryv1.AddressTypeIPv4, web,
			endpoint("10.244.0.1", no, no, yes),
		)},
		want: []string{"10.0.0.10:80 -> reject", "10.0.0.11:80 -> reject"},
	}, {
		name: "target port matched by port name, not order or number",
		services: []*corev1.Service{service("ns", "web", "10.0.0.10",
			servicePort("http", corev1.ProtocolTCP, 80), servicePort("metrics", "", 9090))},
		slices: []*discoveryv1.EndpointSlice{endpointSlice("ns", "web", discoveryv1.AddressTypeIPv4,
			[]discoveryv1.EndpointPort{
				slicePortOf("metrics", corev1.ProtocolTCP, 19090),
				slicePortOf("https", corev1.ProtocolTCP, 80),
				slicePortOf("http", corev1.ProtocolTCP, 18080),
			},
			endpoint("10.244.0.1", yes, yes, no),
		)},
		want: []string{"10.0.0.10:80 -> 10.244.0.1:18080", "10.0.0.10:9090 -> 10.244.0.1:19090"},
	}, {
		name: "an unnamed port, and a slice port with no number",
		services: []*corev1.Service{
			service("ns", "a", "10.0.0.10", servicePort("", "", 443)),
			service("ns", "b", "10.0.0.11", servicePort("", "", 443)),
		},
		slices: []*discoveryv1.EndpointSlice{
			endpointSlice("ns", "a", discoveryv1.AddressTypeIPv4, []discoveryv1.EndpointPort{{Port: ptr.To[int32](8443)}},
				endpoint("10.244.0.1", yes, yes, no)),
			endpointSlice("ns", "b", discoveryv1.AddressTypeIPv4, []discoveryv1.EndpointPort{{Name: ptr.To("")}},
				endpoint("10.244.0.2", yes, yes, no)),
		},
		want: []string{"10.0.0.10:443 -> 10.244.0.1:8443", "10.0.0.11:443 -> reject"},
	}, {
		name: "UDP and SCTP skipped",
		services: []*corev1.Service{service("ns", "dns", "10.0.0.10",
			servicePort("dns", corev1.ProtocolUDP, 53), servicePort("dns-tcp", corev1.ProtocolTCP, 53),
			servicePort("sctp", corev1.ProtocolSCTP, 99))},
		slices: []*discoveryv1.EndpointSlice{endpointSlice("ns", "dns", discoveryv1.AddressTypeIPv4,
			[]discoveryv1.EndpointPort{
				slicePortOf("dns", corev1.ProtocolUDP, 5353),
				slicePortOf("dns-tcp", corev1.ProtocolUDP, 5354), // not TCP: no port for dns-tcp
				slicePortOf("sctp", corev1.ProtocolSCTP, 99),
			},
			endpoint("10.244.0.1", yes, yes, no),
		)},
		want: []string{"10.0.0.10:53 -> reject"},
	}, {
		name: "headless and ExternalName Services skipped",
		services: []*corev1.Service{
			service("ns", "headless", corev1.ClusterIPNone, httpPort),
			{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ext"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com", Ports: []corev1.ServicePort{httpPort}}},
		},
		slices: []*discoveryv1.EndpointSlice{endpointSlice("ns", "headless", discoveryv1.AddressTypeIPv4, web,
			endpoint("10.244.0.1", yes, yes, no))},
		want: nil,
	}, {
		name: "IPv6 slices, addresses and ClusterIPs skipped",
		services: []*corev1.Service{
			service("ns", "web", "10.0.0.10", httpPort),
			service("ns", "six", "fd00::10", httpPort),
		},
		slices: []*discoveryv1.EndpointSlice{
			endpointSlice("ns", "web", discoveryv1.AddressTypeIPv6, web, endpoint("fd00::1", yes, yes, no)),
			endpointSlice("ns", "web", discoveryv1.AddressTypeIPv4, web,
				endpoint("::ffff:10.244.0.9", yes, yes, no), endpoint("10.244.0.1", yes, yes, no)),
			endpointSlice("ns", "six", discoveryv1.AddressTypeIPv6, web, endpoint("fd00::2", yes, yes, no)),
		},
		want: []string{"10.0.0.10:80 -> 10.244.0.1:8080"},
	}, {
		name:     "slices of the same name in another namespace, and FQDN slices, not used; duplicates once",
		services: []*corev1.Service{service("ns", "web", "10.0.0.10", httpPort)},
		slices: []*discoveryv1.EndpointSlice{
			endpointSlice("other", "web", discoveryv1.AddressTypeIPv4, web, endpoint("10.244.1.1", yes, yes, no)),
			endpointSlice("ns", "web", discoveryv1.AddressTypeFQDN, web, endpoint("example.com", yes, yes, no)),
			endpointSlice("ns", "web", discoveryv1.AddressTypeIPv4, web, endpoint("10.244.0.1", yes, yes, no)),
			endpointSlice("ns", "web", discoveryv1.AddressTypeIPv4, web, endpoint("10.244.0.1", yes, yes, no)),
		},
		want: []string{"10.0.0.10:80 -> 10.244.0.1:8080"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, describe(frontends(tt.services, tt.slices))); diff != "" {
				t.Errorf("frontends (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRender: the script for two Services, one with two endpoints and
// one with none.
func TestRender(t *testing.T) {
	fs := []frontend{{
		ip:   netip.MustParseAddr("10.0.0.10"),
		port: 443,
		endpoints: []netip.AddrPort{
			netip.MustParseAddrPort("10.244.0.1:8443"),
			netip.MustParseAddrPort("10.244.0.2:8443"),
		},
	}, {
		ip:   netip.MustParseAddr("10.0.0.11"),
		port: 80,
	}, {
		ip:        netip.MustParseAddr("10.0.0.12"),
		port:      80,
		endpoints: []netip.AddrPort{netip.MustParseAddrPort("10.244.0.3:8080")},
	}}
	want := `add table ip t
delete table ip t
table ip t {
	chain services {
		type nat hook output priority -100; policy accept;
		ip daddr 10.0.0.10 tcp dport 443 numgen random mod 2 vmap { 0 : goto ep-0, 1 : goto ep-1 }
		ip daddr 10.0.0.11 tcp dport 80 reject with tcp reset
		ip daddr 10.0.0.12 tcp dport 80 numgen random mod 1 vmap { 0 : goto ep-2 }
	}
	chain ep-0 {
		meta l4proto tcp dnat to 10.244.0.1:8443
	}
	chain ep-1 {
		meta l4proto tcp dnat to 10.244.0.2:8443
	}
	chain ep-2 {
		meta l4proto tcp dnat to 10.244.0.3:8080
	}
}
`
	got := render("t", fs)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("render (-want +got):\n%s", diff)
	}
	checkScript(t, got)
	checkScript(t, render("t", nil))
}

// TestRenderKeepsClusterStringsOut: names, port names and addresses that
// carry nft syntax never reach the script; bad addresses are skipped.
func TestRenderKeepsClusterStringsOut(t *testing.T) {
	const evil = `x; flush ruleset; table ip evil { }`
	svc := service(evil, evil, "10.0.0.10", servicePort(evil, corev1.ProtocolTCP, 80))
	svc.Spec.ClusterIPs = []string{evil}
	bad := service("ns", "bad", "10.0.0.11 tcp dport 1 accept", servicePort("http", corev1.ProtocolTCP, 80))
	slice := endpointSlice(evil, evil, discoveryv1.AddressTypeIPv4,
		[]discoveryv1.EndpointPort{slicePortOf(evil, corev1.ProtocolTCP, 8080)},
		endpoint("10.244.0.1", yes, yes, no),
		endpoint("10.244.0.2; flush ruleset", yes, yes, no),
	)
	slice.Name = evil
	slice.Endpoints[0].Hostname = ptr.To(evil)
	slice.Endpoints[0].NodeName = ptr.To(evil)
	script := render("t", frontends([]*corev1.Service{svc, bad}, []*discoveryv1.EndpointSlice{slice}))
	for _, s := range []string{"flush", "evil", "x;", "10.0.0.11", "10.244.0.2"} {
		if strings.Contains(script, s) {
			t.Errorf("script has %q:\n%s", s, script)
		}
	}
	if !strings.Contains(script, "dnat to 10.244.0.1:8080") {
		t.Errorf("script does not send 10.0.0.10:80 to 10.244.0.1:8080:\n%s", script)
	}
	checkScript(t, script)
}

// checkScript has nft check the script, without applying it, when the
// test runs as root with nft.
func checkScript(t *testing.T, script string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	if _, err := exec.LookPath("nft"); err != nil {
		return
	}
	cmd := exec.Command("nft", "--check", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("nft --check rejects the script: %v: %s\n%s", err, out, script)
	}
}

// The integration test's addresses: its API server's Service range and
// the endpoints' pod IPs, both unused by the other packages, which make
// test runs at the same time in the same network namespace (its table
// applies to every process there).
const (
	serviceRange = "10.253.1.0/24"
	podA, podB   = "10.253.0.1", "10.253.0.2"
	podPort      = 8080
	table        = "myoperator-kubeproxy-test"
)

// needNetnsRoot skips the test unless it runs as root, with nft and
// conntrack, in a network namespace other than the host's (make test runs
// every package in hack/netns.sh's): it changes the namespace's NAT rules
// and loopback addresses.
func needNetnsRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root in a network namespace (make test runs it in hack/netns.sh's)")
	}
	for _, tool := range []string{"nft", "conntrack"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (hack/ensure-nat-tools.sh installs nftables and conntrack): %v", tool, err)
		}
	}
	self, err1 := os.Readlink("/proc/self/ns/net")
	host, err2 := os.Readlink("/proc/1/ns/net")
	if err1 == nil && err2 == nil && self == host {
		t.Skip("runs in the host's network namespace; run it in hack/netns.sh's, as make test does")
	}
}

// addLoopback adds ip to lo until the test ends, as the pod runner does a
// pod IP; one left by a killed run is taken over.
func addLoopback(t *testing.T, ip string) {
	t.Helper()
	out, err := exec.Command("ip", "addr", "add", ip+"/32", "dev", "lo").CombinedOutput()
	if err != nil && !strings.Contains(string(out), "File exists") {
		t.Fatalf("ip addr add %s/32 dev lo: %v: %s", ip, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "addr", "del", ip+"/32", "dev", "lo").Run() })
}

// serveName answers every request at ip:podPort with name.
func serveName(t *testing.T, ip, name string) {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, fmt.Sprint(podPort)))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, name) }),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// TestClusterIPReachesEndpoints: against a real API server, connections
// to a Service's ClusterIP reach its ready endpoints, then the other one
// when one is no longer ready, then a serving terminating one when none
// is ready, and are refused when there are no endpoints; the table is
// gone when the proxy stops.
func TestClusterIPReachesEndpoints(t *testing.T) {
	needNetnsRoot(t)
	env, err := testenv.New(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", serviceRange)
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting the API server: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addLoopback(t, podA)
	addLoopback(t, podB)
	serveName(t, podA, "a")
	serveName(t, podB, "b")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := time.Now()
	stop, err := Start(ctx, Config{Client: cs, Table: table, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("started in %s", time.Since(started).Round(time.Millisecond))
	t.Cleanup(func() { _ = stop() })

	svc, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeClusterIP,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(podPort), Protocol: corev1.ProtocolTCP}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(svc.Spec.ClusterIP, "80")
	t.Logf("Service web at %s", addr)

	// A new connection for every request.
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func() (string, error) {
		resp, err := hc.Get("http://" + addr + "/")
		if err != nil {
			return "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		return string(body), err
	}
	// answers returns how many of n requests each endpoint answered, or
	// why one failed.
	answers := func(n int) (map[string]int, string) {
		got := map[string]int{}
		for range n {
			name, err := get()
			if err != nil {
				return got, err.Error()
			}
			got[name]++
		}
		return got, ""
	}
	// refused reports why a connection is not refused at once (a dial
	// made before the rule is there goes nowhere, and times out).
	refused := func() string {
		c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return "a connection to " + addr + " is accepted"
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Sprintf("dialing %s: %v, not refused", addr, err)
		}
		return ""
	}

	t.Log("a Service with no EndpointSlice refuses connections")
	testenv.Eventually(t, 2*time.Second, refused)

	eps := []discoveryv1.Endpoint{endpoint(podA, yes, yes, no), endpoint(podB, yes, yes, no)}
	slice, err := cs.DiscoveryV1().EndpointSlices("default").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{slicePortOf("http", corev1.ProtocolTCP, podPort)},
		Endpoints:   eps,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("both endpoints ready: both answer within 40 requests")
	testenv.Eventually(t, 2*time.Second, func() string {
		got, why := answers(40)
		if why == "" && (got["a"] == 0 || got["b"] == 0) {
			why = fmt.Sprintf("answers %v", got)
		}
		return why
	})

	update := func(conds ...discoveryv1.EndpointConditions) {
		t.Helper()
		for i := range conds {
			slice.Endpoints[i].Conditions = conds[i]
		}
		if slice, err = cs.DiscoveryV1().EndpointSlices("default").Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	onlyTo := func(name string) func() string {
		return func() string {
			got, why := answers(20)
			if why == "" && got[name] != 20 {
				why = fmt.Sprintf("answers %v, want all from %s", got, name)
			}
			return why
		}
	}
	t.Log("a not ready: all new connections go to b")
	update(discoveryv1.EndpointConditions{Ready: no, Serving: no, Terminating: no})
	testenv.Eventually(t, 2*time.Second, onlyTo("b"))

	t.Log("neither ready, a serving while terminating: all go to a")
	update(
		discoveryv1.EndpointConditions{Ready: no, Serving: yes, Terminating: yes},
		discoveryv1.EndpointConditions{Ready: no, Serving: no, Terminating: yes},
	)
	testenv.Eventually(t, 2*time.Second, onlyTo("a"))

	t.Log("EndpointSlice deleted: connections refused")
	if err := cs.DiscoveryV1().EndpointSlices("default").Delete(ctx, slice.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Second, refused)

	cancel()
	if err := stop(); err != nil {
		t.Errorf("stopping: %v", err)
	}
	if out, err := exec.Command("nft", "list", "table", "ip", table).CombinedOutput(); err == nil {
		t.Errorf("table %s still there after the proxy stopped:\n%s", table, out)
	}
}

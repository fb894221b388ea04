package kubeproxy

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log"
	"net/netip"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// Config says which cluster to follow and which table to write.
type Config struct {
	// Client lists and watches the cluster's Services and EndpointSlices
	// in all namespaces.
	Client kubernetes.Interface
	// Table is the name of the nftables table (family ip) the rules go
	// in, unique per cluster in the network namespace, for example
	// "myoperator-kubeproxy-e2e": letters, digits, '-' and '_', starting
	// with a letter.
	Table string
	// Logf reports each table written and each failure to write one;
	// log.Printf when nil.
	Logf func(format string, args ...any)
}

const (
	// syncTimeout bounds the first list of Services and EndpointSlices.
	syncTimeout = 30 * time.Second
	// debounce is how long a change waits for the ones that follow it (a
	// rollout updates an EndpointSlice several times in a row) before the
	// table is written: every change is in the kernel within about this
	// long plus the time to write the table.
	debounce = 50 * time.Millisecond
	// retryAfter is how long a table that could not be written waits
	// before the next try.
	retryAfter = time.Second
)

// tableName is what Config.Table may be: an nft identifier, no more.
var tableName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)

// Start writes the table for the cluster's Services and EndpointSlices as
// they are now, and keeps it in step with them in the background until
// ctx ends or stop is called; then it deletes the table. It returns once
// the first table is in the kernel, so that a caller's next connection to
// a ClusterIP goes through it, or with an error when it cannot start: nft
// or conntrack missing, a bad Config, the informers not synced within
// 30 s, or the first table not written. Then nothing is left running.
//
// stop ends it, if ctx has not already, waits until the table is deleted
// and returns the error of deleting it; it may be called more than once.
func Start(ctx context.Context, cfg Config) (stop func() error, err error) {
	if cfg.Client == nil {
		return nil, errors.New("kubeproxy: Config.Client is nil")
	}
	if !tableName.MatchString(cfg.Table) {
		return nil, fmt.Errorf("kubeproxy: table name %q is not letters, digits, '-' and '_' starting with a letter", cfg.Table)
	}
	for _, tool := range []string{"nft", "conntrack"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("kubeproxy: needs nft and conntrack (Debian's packages nftables and conntrack; hack/ensure-nat-tools.sh installs them): %w", err)
		}
	}
	if cfg.Logf == nil {
		cfg.Logf = log.Printf
	}

	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactory(cfg.Client, 0)
	services := factory.Core().V1().Services()
	endpointSlices := factory.Discovery().V1().EndpointSlices()
	p := &proxy{
		cfg:       cfg,
		services:  services.Lister(),
		slices:    endpointSlices.Lister(),
		changed:   make(chan struct{}, 1),
		forgotten: map[netip.AddrPort]bool{},
	}
	fail := func(err error) (func() error, error) {
		cancel()
		factory.Shutdown()
		return nil, err
	}
	notify := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.notify() },
		UpdateFunc: func(any, any) { p.notify() },
		DeleteFunc: func(any) { p.notify() },
	}
	for _, inf := range []cache.SharedIndexInformer{services.Informer(), endpointSlices.Informer()} {
		if _, err := inf.AddEventHandler(notify); err != nil {
			return fail(fmt.Errorf("kubeproxy: watching: %w", err))
		}
	}
	factory.Start(ctx.Done())
	syncCtx, cancelSync := context.WithTimeout(ctx, syncTimeout)
	synced := cache.WaitForCacheSync(syncCtx.Done(), services.Informer().HasSynced, endpointSlices.Informer().HasSynced)
	cancelSync()
	if !synced {
		return fail(fmt.Errorf("kubeproxy: Services and EndpointSlices not listed within %s (or the context ended): %w", syncTimeout, context.Cause(syncCtx)))
	}
	// The first sync below covers the objects listed so far.
	select {
	case <-p.changed:
	default:
	}
	if err := p.sync(); err != nil {
		return fail(errors.Join(err, deleteTable(cfg.Table)))
	}

	done := make(chan struct{})
	var stopErr error
	go func() {
		defer close(done)
		p.loop(ctx)
		factory.Shutdown()
		stopErr = deleteTable(cfg.Table)
	}()
	return func() error {
		cancel()
		<-done
		return stopErr
	}, nil
}

// proxy is Start's running state; only Start and then loop use it.
type proxy struct {
	cfg      Config
	services corelisters.ServiceLister
	slices   discoverylisters.EndpointSliceLister
	changed  chan struct{} // holds a token when the table may be stale
	last     string        // the script last written

	// forgotten holds the ClusterIP ports in the last table, whose
	// tracked connections were forgotten before they first appeared.
	forgotten map[netip.AddrPort]bool
}

// notify marks the table stale; many marks make one sync.
func (p *proxy) notify() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// loop writes the table after each change until ctx ends.
func (p *proxy) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.changed:
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(debounce):
		}
		// Changes made during the wait are in the listers already.
		select {
		case <-p.changed:
		default:
		}
		if err := p.sync(); err != nil {
			p.cfg.Logf("kubeproxy: %v; trying again in %s", err, retryAfter)
			go func() {
				select {
				case <-ctx.Done():
				case <-time.After(retryAfter):
					p.notify()
				}
			}()
		}
	}
}

// sync writes the table for what the listers hold now, unless it is the
// table already written.
func (p *proxy) sync() error {
	svcs, err := p.services.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing Services: %w", err)
	}
	eps, err := p.slices.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing EndpointSlices: %w", err)
	}
	fs := frontends(svcs, eps)
	script := render(p.cfg.Table, fs)
	if script == p.last {
		return nil
	}
	// Connection tracking may still hold connections to a ClusterIP port
	// made through a table of an earlier run that was killed (or through
	// a Service deleted since), each with the endpoint it was sent to:
	// one it did not see close stays "established" for days, and a new
	// connection from the same source port would be taken for it and
	// sent to that endpoint. Before a port is in the table, no connection
	// to it can be one to keep: forget them all.
	now := make(map[netip.AddrPort]bool, len(fs))
	for _, f := range fs {
		key := netip.AddrPortFrom(f.ip, f.port)
		now[key] = true
		if !p.forgotten[key] {
			if err := Forget(key); err != nil {
				return err
			}
		}
	}
	if err := NFT(script); err != nil {
		return err
	}
	p.last, p.forgotten = script, now
	n := 0
	for _, f := range fs {
		n += len(f.endpoints)
	}
	p.cfg.Logf("kubeproxy: table %s: %d ClusterIP ports, %d endpoints", p.cfg.Table, len(fs), n)
	return nil
}

// frontend is one TCP port of a Service's ClusterIP and the endpoints new
// connections to it go to, none when they are refused. Every field is
// parsed and checked: nothing else from the cluster gets into a script.
type frontend struct {
	ip        netip.Addr
	port      uint16
	endpoints []netip.AddrPort // sorted, no duplicates
}

// frontends returns the TCP ports of the Services' IPv4 ClusterIPs with
// the endpoints kube-proxy would send new connections to: those of the
// Service's IPv4 EndpointSlices that are ready, or when none is, those
// that are serving while terminating, at the slice port named as the
// Service port. Only TCP: the suite's Services (webhooks, the API) are
// TCP, and UDP would need conntrack entries cleared as endpoints go.
func frontends(services []*corev1.Service, endpointSlices []*discoveryv1.EndpointSlice) []frontend {
	type key struct{ namespace, service string }
	byService := map[key][]*discoveryv1.EndpointSlice{}
	for _, s := range endpointSlices {
		name := s.Labels[discoveryv1.LabelServiceName]
		if name == "" || s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		k := key{s.Namespace, name}
		byService[k] = append(byService[k], s)
	}
	var out []frontend
	for _, svc := range services {
		// Headless ("None") and ExternalName ("") Services do not parse.
		ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
		if err != nil || !ip.Is4() {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			if !isTCP(sp.Protocol) || sp.Port < 1 || sp.Port > 65535 {
				continue
			}
			out = append(out, frontend{
				ip:        ip,
				port:      uint16(sp.Port),
				endpoints: endpointsFor(sp.Name, byService[key{svc.Namespace, svc.Name}]),
			})
		}
	}
	slices.SortFunc(out, func(a, b frontend) int {
		return cmp.Or(a.ip.Compare(b.ip), cmp.Compare(a.port, b.port))
	})
	return out
}

// endpointsFor returns the endpoints for the Service port named portName
// in the Service's IPv4 EndpointSlices.
func endpointsFor(portName string, endpointSlices []*discoveryv1.EndpointSlice) []netip.AddrPort {
	var ready, terminating []netip.AddrPort
	for _, s := range endpointSlices {
		port, ok := slicePort(portName, s.Ports)
		if !ok {
			continue
		}
		for _, ep := range s.Endpoints {
			// An IPv4 endpoint has one address; kube-proxy uses the first.
			if len(ep.Addresses) == 0 {
				continue
			}
			ip, err := netip.ParseAddr(ep.Addresses[0])
			if err != nil || !ip.Is4() {
				continue
			}
			c := ep.Conditions
			isReady := c.Ready == nil || *c.Ready
			serving := isReady // the API's meaning of a nil serving
			if c.Serving != nil {
				serving = *c.Serving
			}
			switch {
			case isReady:
				ready = append(ready, netip.AddrPortFrom(ip, port))
			case serving && c.Terminating != nil && *c.Terminating:
				terminating = append(terminating, netip.AddrPortFrom(ip, port))
			}
		}
	}
	// Terminating endpoints that still serve take new connections only
	// when no endpoint is ready, so that a rolling update of a
	// Deployment of one replica, or a drain, refuses none meanwhile.
	eps := ready
	if len(eps) == 0 {
		eps = terminating
	}
	// One address may be in two slices while they are being rebalanced.
	slices.SortFunc(eps, netip.AddrPort.Compare)
	return slices.Compact(eps)
}

// slicePort returns the TCP port of an EndpointSlice named name, as the
// Service port it serves is ("" for a Service's only, unnamed port).
func slicePort(name string, ports []discoveryv1.EndpointPort) (uint16, bool) {
	for _, p := range ports {
		pname := ""
		if p.Name != nil {
			pname = *p.Name
		}
		var proto corev1.Protocol
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		if pname == name && isTCP(proto) && p.Port != nil && *p.Port >= 1 && *p.Port <= 65535 {
			return uint16(*p.Port), true
		}
	}
	return 0, false
}

// isTCP reports whether a port's protocol is TCP, the API's default.
func isTCP(p corev1.Protocol) bool { return p == "" || p == corev1.ProtocolTCP }

// render returns the nft script that replaces the table with one that
// sends new connections to each frontend to one of its endpoints at
// random, or refuses them when it has none. Only the table name (checked
// by Start), IPs and ports parsed into net/netip and integers, and
// indexes go in: nothing a cluster's user writes can become nft syntax.
//
// Established connections keep the endpoint they were sent to, as with
// kube-proxy: the nat chain sees only a connection's first packet, and
// connection tracking translates the rest.
func render(table string, fs []frontend) string {
	var b strings.Builder
	// Adding the table then deleting it removes the one written before,
	// or left by a run that was killed, without failing when there is
	// none; nft -f applies the whole script as one transaction, so a
	// connection sees the old table or the new, never neither.
	fmt.Fprintf(&b, "add table ip %[1]s\ndelete table ip %[1]s\ntable ip %[1]s {\n", table)
	// The API server and the tests are local processes: their packets
	// pass the output hook, and dstnat priority (-100) is where
	// destination NAT goes.
	b.WriteString("\tchain services {\n\t\ttype nat hook output priority -100; policy accept;\n")
	var endpoints []netip.AddrPort // by endpoint chain index
	for _, f := range fs {
		if len(f.endpoints) == 0 {
			// As kube-proxy does, refuse at once rather than let the
			// client wait for a timeout.
			fmt.Fprintf(&b, "\t\tip daddr %s tcp dport %d reject with tcp reset\n", f.ip, f.port)
			continue
		}
		to := make([]string, len(f.endpoints))
		for i, ep := range f.endpoints {
			to[i] = fmt.Sprintf("%d : goto ep-%d", i, len(endpoints))
			endpoints = append(endpoints, ep)
		}
		fmt.Fprintf(&b, "\t\tip daddr %s tcp dport %d numgen random mod %d vmap { %s }\n",
			f.ip, f.port, len(f.endpoints), strings.Join(to, ", "))
	}
	b.WriteString("\t}\n")
	for i, ep := range endpoints {
		// nft wants the protocol matched before a port is translated.
		fmt.Fprintf(&b, "\tchain ep-%d {\n\t\tmeta l4proto tcp dnat to %s\n\t}\n", i, ep)
	}
	b.WriteString("}\n")
	return b.String()
}

// deleteTable deletes the table, if there is one.
func deleteTable(table string) error {
	return NFT(fmt.Sprintf("add table ip %[1]s\ndelete table ip %[1]s\n", table))
}

// Forget deletes the tracked TCP connections to addr (conntrack): a
// connection made through an earlier table and not seen to close stays
// "established" for days, and a new connection from the same source port
// would be taken for it and sent where it went. test/bench's webhook
// Service forgets its port with it too.
func Forget(addr netip.AddrPort) error {
	args := []string{"-D", "-p", "tcp", "--orig-dst", addr.Addr().String(), "--orig-port-dst", strconv.Itoa(int(addr.Port()))}
	out, err := exec.Command("conntrack", args...).CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) && strings.Contains(string(out), " 0 flow entries") {
		return nil // none to delete
	}
	if err != nil {
		return fmt.Errorf("conntrack %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// NFT runs script as one nftables transaction.
func NFT(script string) error {
	cmd := exec.Command("nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("nft -f - <<%q: %w: %s", script, err, strings.TrimSpace(out.String()))
	}
	return nil
}

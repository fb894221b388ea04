package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// exitUnreachable is runhost's exit code when no address can work.
const exitUnreachable = 3

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file; empty reads KUBECONFIG or ~/.kube/config, as kubectl does")
	flag.Parse()
	f, err := gather(*kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "make run: %v\n", err)
		os.Exit(1)
	}
	c := choose(f)
	if c.Refuse != "" {
		fmt.Fprintln(os.Stderr, c.Refuse)
		os.Exit(exitUnreachable)
	}
	fmt.Printf("HOST=%s\nBIND=%s\nIPS=%s\nDNS=%s\n", c.URLHost(), c.Bind, strings.Join(c.IPs, ","), strings.Join(c.DNS, ","))
	fmt.Fprintf(os.Stderr, "make run: the API server calls the webhooks at %s: %s\n", c.Host, c.Why)
}

// route is what this host's routing table says of a destination (ip route
// get): local (an address of this host), the gateway it goes through, or
// this host's source address on the link it is on.
type route struct {
	Local   bool
	Gateway string
	Dev     string
	Src     string
}

// node is what runhost reads of a Node: its name, labels and addresses.
type node struct {
	Name   string
	Labels map[string]string
	IPs    []string
}

// facts are everything choose decides from, gathered by gather.
type facts struct {
	Override       string // RUN_WEBHOOK_HOST
	Context        string
	Server         string // the kubeconfig's server URL
	ServerIP       string // its host resolved on this host; empty when it does not resolve
	ServerLoopback bool
	GOOS           string
	Nodes          []node
	NodesErr       error
	Route          func(ip string) (route, error)
}

// choice is where the manager serves and what the certificate says, or why
// nothing can work.
type choice struct {
	Host   string // in the webhook URLs
	Bind   string // what the manager listens on
	IPs    []string
	DNS    []string
	Why    string
	Refuse string
}

// URLHost is Host as a URL's host: an IPv6 address in brackets.
func (c choice) URLHost() string {
	if ip := net.ParseIP(c.Host); ip != nil && ip.To4() == nil {
		return "[" + c.Host + "]"
	}
	return c.Host
}

// at is a choice of an IP address this host holds.
func at(ip, why string) choice {
	return choice{Host: ip, Bind: ip, IPs: []string{ip}, Why: why}
}

// local is the choice for an API server on this host.
func local(why string) choice {
	return choice{Host: "localhost", Bind: "127.0.0.1", DNS: []string{"localhost"}, Why: why}
}

// named is a choice of a name the cluster resolves to this host; bind is
// this host's address on the way there (127.0.0.1 when the cluster reaches
// this host's loopback, as Docker Desktop does).
func named(name, bind, why string) choice {
	return choice{Host: name, Bind: bind, DNS: []string{name}, Why: why}
}

func choose(f facts) choice {
	if f.Override != "" {
		return override(f)
	}
	switch f.Context {
	case "docker-desktop", "desktop-linux":
		return named("host.docker.internal", "127.0.0.1", "context "+f.Context+" is Docker Desktop, whose cluster reaches this host as host.docker.internal")
	}
	if f.Context == "minikube" || anyNode(f.Nodes, func(n node) bool { return n.Labels["minikube.k8s.io/name"] != "" }) {
		// This host's address on the node's network; when it cannot be
		// told (no ip command, a VM on a network it does not route),
		// every address.
		bind, where := "", "the manager listens on every address, since this host's address on the node's network is not known here"
		if r, ok := onLinkNode(f); ok {
			bind, where = r.Src, "this host is "+r.Src+" on its network"
		} else if r, err := f.Route(f.ServerIP); f.ServerIP != "" && err == nil && !r.Local && r.Gateway == "" {
			bind, where = r.Src, "this host is "+r.Src+" on its network" // a VM driver: the API server is the node
		}
		return named("host.minikube.internal", bind, "the cluster is minikube's, whose node reaches this host as host.minikube.internal ("+where+")")
	}
	if !f.ServerLoopback {
		if f.ServerIP == "" {
			return refuse(f, "its host does not resolve here")
		}
		r, err := f.Route(f.ServerIP)
		switch {
		case err != nil:
			return refuse(f, "this host has no route to it ("+err.Error()+")")
		case r.Local:
			return local("the API server " + f.Server + " is an address of this host")
		case r.Gateway != "":
			return refuse(f, "it is reached through the gateway "+r.Gateway+", so it is on no network this host is on")
		}
		return at(r.Src, fmt.Sprintf("the API server %s is on %s, a network this host is on, where this host is %s", f.Server, r.Dev, r.Src))
	}
	if f.NodesErr != nil {
		return local("the API server " + f.Server + " is on loopback and its nodes could not be read (" + f.NodesErr.Error() + "): taken to run on this host; set RUN_WEBHOOK_HOST if it does not")
	}
	for _, n := range f.Nodes {
		for _, ip := range n.IPs {
			if r, err := f.Route(ip); err == nil && r.Local {
				return local("the API server " + f.Server + " is on loopback and node " + n.Name + " (" + ip + ") is this host")
			}
		}
	}
	if r, ok := onLinkNode(f); ok {
		return at(r.Src, fmt.Sprintf("the API server %s is a port forward to node %s (%s, as with kind), on %s, where this host is %s", f.Server, r.node, r.ip, r.Dev, r.Src))
	}
	if f.GOOS == "darwin" && len(f.Nodes) > 0 {
		return named("host.docker.internal", "127.0.0.1", "the API server "+f.Server+" is on loopback and its nodes are on no network of this Mac: taken to run under Docker Desktop (kind, minikube's docker driver), whose containers reach this host as host.docker.internal")
	}
	return local("the API server " + f.Server + " is on loopback and no node is on a network of this host: it runs on this host (as the project's kwok clusters do)")
}

// nodeRoute is the route to one node's address.
type nodeRoute struct {
	route
	node, ip string
}

// onLinkNode is the route to the first node address on a network this host
// is on (no gateway between): where a kind node's container is.
func onLinkNode(f facts) (nodeRoute, bool) {
	for _, n := range f.Nodes {
		for _, ip := range n.IPs {
			r, err := f.Route(ip)
			if err == nil && !r.Local && r.Gateway == "" && r.Src != "" {
				return nodeRoute{route: r, node: n.Name, ip: ip}, true
			}
		}
	}
	return nodeRoute{}, false
}

func anyNode(nodes []node, p func(node) bool) bool {
	for _, n := range nodes {
		if p(n) {
			return true
		}
	}
	return false
}

// override is RUN_WEBHOOK_HOST: an IP address of this host is bound; any
// other address or name makes the manager listen on every address, since
// which of this host's addresses it arrives at is not known here.
func override(f facts) choice {
	h := f.Override
	why := "RUN_WEBHOOK_HOST=" + h
	if ip := net.ParseIP(h); ip != nil {
		if r, err := f.Route(ip.String()); err == nil && r.Local {
			return at(ip.String(), why)
		}
		c := at(ip.String(), why+" (not an address of this host: the manager listens on every address)")
		c.Bind = ""
		return c
	}
	if h == "localhost" {
		return local(why)
	}
	return named(h, "", why+" (the manager listens on every address)")
}

// refuse says why no address can work and what does.
func refuse(f facts, why string) choice {
	return choice{Refuse: fmt.Sprintf(`make run: the API server of context %q, %s, cannot call a manager on this host: %s.
A manager here serves the webhooks and the Drink conversion, which the API server calls, so make run
stops before it changes anything in the cluster. There, run the operator in the cluster instead:

  make docker-build docker-push IMG=<registry>/myoperator:dev
  make deploy IMG=<registry>/myoperator:dev

(docs/install.md, "From this tree"). If the API server can reach this host after all, name the address:

  RUN_WEBHOOK_HOST=<this host's address, as the cluster reaches it> make run`, f.Context, f.Server, why)}
}

// gather reads the kubeconfig, resolves its server and, for a server on
// loopback, lists the nodes (a read; nothing is written).
func gather(kubeconfig string) (facts, error) {
	f := facts{Override: os.Getenv("RUN_WEBHOOK_HOST"), GOOS: runtime.GOOS, Route: ipRoute}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	raw, err := cc.RawConfig()
	if err != nil {
		return f, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	f.Context = raw.CurrentContext
	cfg, err := cc.ClientConfig()
	if err != nil {
		return f, fmt.Errorf("the kubeconfig's current context: %w", err)
	}
	f.Server = cfg.Host
	u, err := url.Parse(cfg.Host)
	if err != nil || u.Hostname() == "" {
		return f, fmt.Errorf("the kubeconfig's server %q is no URL", cfg.Host)
	}
	if ips, err := net.LookupIP(u.Hostname()); err == nil && len(ips) > 0 {
		f.ServerIP = ips[0].String()
		f.ServerLoopback = ips[0].IsLoopback()
	}
	if f.Override != "" || !f.ServerLoopback {
		return f, nil
	}
	cfg.Timeout = 10 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return f, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		f.NodesErr = err
		return f, nil
	}
	for _, n := range list.Items {
		nd := node{Name: n.Name, Labels: n.Labels}
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP || a.Type == corev1.NodeExternalIP {
				nd.IPs = append(nd.IPs, a.Address)
			}
		}
		f.Nodes = append(f.Nodes, nd)
	}
	return f, nil
}

// ipRoute asks this host's routing table (ip route get) how it reaches ip.
func ipRoute(ip string) (route, error) {
	out, err := exec.Command("ip", "-j", "route", "get", ip).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return route{}, fmt.Errorf("ip route get %s: %s", ip, strings.TrimSpace(string(ee.Stderr)))
		}
		return route{}, fmt.Errorf("ip route get %s: %w", ip, err)
	}
	var rs []struct {
		Type    string `json:"type"`
		Gateway string `json:"gateway"`
		Dev     string `json:"dev"`
		PrefSrc string `json:"prefsrc"`
	}
	if err := json.Unmarshal(out, &rs); err != nil || len(rs) == 0 {
		return route{}, fmt.Errorf("ip route get %s printed %q", ip, out)
	}
	return route{Local: rs[0].Type == "local", Gateway: rs[0].Gateway, Dev: rs[0].Dev, Src: rs[0].PrefSrc}, nil
}

package main

import (
	"errors"
	"strings"
	"testing"
)

// routes is a routing table: the route each address takes; an address it
// does not hold has no route.
type routes map[string]route

func (r routes) get(ip string) (route, error) {
	if rt, ok := r[ip]; ok {
		return rt, nil
	}
	return route{}, errors.New("RTNETLINK answers: Network is unreachable")
}

func TestChoose(t *testing.T) {
	table := routes{
		"127.0.0.1":    {Local: true, Dev: "lo", Src: "127.0.0.1"},
		"192.0.2.2":    {Local: true, Dev: "eth0", Src: "192.0.2.2"},
		"172.18.0.2":   {Dev: "br-5e1", Src: "172.18.0.1"},
		"192.168.49.2": {Dev: "br-mk", Src: "192.168.49.1"},
		"10.250.0.2":   {Dev: "veth-run", Src: "10.250.0.1"},
		"203.0.113.7":  {Gateway: "192.0.2.1", Dev: "eth0", Src: "192.0.2.2"},
		"10.0.0.1":     {Gateway: "192.0.2.1", Dev: "eth0", Src: "192.0.2.2"},
	}
	kind := []node{{Name: "kind-control-plane", IPs: []string{"172.18.0.2"}}}
	for _, tc := range []struct {
		name string
		f    facts
		want choice // Why is checked for a part of it
		why  string
	}{
		{
			name: "kind: a port forward on loopback to a node container on a bridge",
			f:    facts{Context: "kind-kind", Server: "https://127.0.0.1:40123", ServerIP: "127.0.0.1", ServerLoopback: true, Nodes: kind},
			want: choice{Host: "172.18.0.1", Bind: "172.18.0.1", IPs: []string{"172.18.0.1"}},
			why:  "port forward to node kind-control-plane (172.18.0.2, as with kind), on br-5e1",
		},
		{
			name: "the same cluster under another name",
			f:    facts{Context: "bridge", Server: "https://127.0.0.1:40123", ServerIP: "127.0.0.1", ServerLoopback: true, Nodes: []node{{Name: "n", IPs: []string{"10.250.0.2"}}}},
			want: choice{Host: "10.250.0.1", Bind: "10.250.0.1", IPs: []string{"10.250.0.1"}},
			why:  "where this host is 10.250.0.1",
		},
		{
			name: "kwok on this host: fake node addresses with no link",
			f:    facts{Context: "kwok-dev", Server: "https://127.0.0.1:32766", ServerIP: "127.0.0.1", ServerLoopback: true, Nodes: []node{{Name: "kwok-node-0", IPs: []string{"10.0.0.1"}}, {Name: "kwok-node-1", IPs: []string{"10.9.9.9"}}}},
			want: choice{Host: "localhost", Bind: "127.0.0.1", DNS: []string{"localhost"}},
			why:  "it runs on this host",
		},
		{
			name: "a node that is this host (k3s, kubeadm on this machine)",
			f:    facts{Context: "default", Server: "https://127.0.0.1:6443", ServerIP: "127.0.0.1", ServerLoopback: true, Nodes: []node{{Name: "me", IPs: []string{"192.0.2.2"}}}},
			want: choice{Host: "localhost", Bind: "127.0.0.1", DNS: []string{"localhost"}},
			why:  "node me (192.0.2.2) is this host",
		},
		{
			name: "nodes not readable",
			f:    facts{Context: "x", Server: "https://127.0.0.1:6443", ServerIP: "127.0.0.1", ServerLoopback: true, NodesErr: errors.New("forbidden")},
			want: choice{Host: "localhost", Bind: "127.0.0.1", DNS: []string{"localhost"}},
			why:  "nodes could not be read (forbidden)",
		},
		{
			name: "minikube, docker driver",
			f:    facts{Context: "minikube", Server: "https://127.0.0.1:32771", ServerIP: "127.0.0.1", ServerLoopback: true, Nodes: []node{{Name: "minikube", IPs: []string{"192.168.49.2"}, Labels: map[string]string{"minikube.k8s.io/name": "minikube"}}}},
			want: choice{Host: "host.minikube.internal", Bind: "192.168.49.1", DNS: []string{"host.minikube.internal"}},
			why:  "minikube's",
		},
		{
			name: "minikube profile under another context name, VM driver",
			f:    facts{Context: "dev", Server: "https://10.250.0.2:8443", ServerIP: "10.250.0.2", Nodes: []node{{Name: "dev", Labels: map[string]string{"minikube.k8s.io/name": "dev"}}}},
			want: choice{Host: "host.minikube.internal", Bind: "10.250.0.1", DNS: []string{"host.minikube.internal"}},
			why:  "minikube's",
		},
		{
			name: "minikube on a VM network this host does not route",
			f:    facts{Context: "minikube", Server: "https://198.51.100.5:8443", ServerIP: "198.51.100.5"},
			want: choice{Host: "host.minikube.internal", DNS: []string{"host.minikube.internal"}},
			why:  "listens on every address",
		},
		{
			name: "Docker Desktop",
			f:    facts{Context: "docker-desktop", Server: "https://kubernetes.docker.internal:6443", ServerIP: "127.0.0.1", ServerLoopback: true},
			want: choice{Host: "host.docker.internal", Bind: "127.0.0.1", DNS: []string{"host.docker.internal"}},
			why:  "Docker Desktop",
		},
		{
			name: "kind on a Mac: the node is inside Docker Desktop's VM",
			f:    facts{Context: "kind-kind", Server: "https://127.0.0.1:40123", ServerIP: "127.0.0.1", ServerLoopback: true, GOOS: "darwin", Nodes: []node{{Name: "kind-control-plane", IPs: []string{"172.30.0.2"}}}},
			want: choice{Host: "host.docker.internal", Bind: "127.0.0.1", DNS: []string{"host.docker.internal"}},
			why:  "Docker Desktop",
		},
		{
			name: "an API server on a network this host is on",
			f:    facts{Context: "lab", Server: "https://10.250.0.2:6443", ServerIP: "10.250.0.2"},
			want: choice{Host: "10.250.0.1", Bind: "10.250.0.1", IPs: []string{"10.250.0.1"}},
			why:  "on veth-run, a network this host is on",
		},
		{
			name: "the server names this host's own address",
			f:    facts{Context: "me", Server: "https://192.0.2.2:6443", ServerIP: "192.0.2.2"},
			want: choice{Host: "localhost", Bind: "127.0.0.1", DNS: []string{"localhost"}},
			why:  "is an address of this host",
		},
		{
			name: "a remote cluster behind a gateway",
			f:    facts{Context: "gke_prod", Server: "https://203.0.113.7", ServerIP: "203.0.113.7"},
			want: choice{Refuse: "reached through the gateway 192.0.2.1"},
		},
		{
			name: "a server that does not resolve",
			f:    facts{Context: "gone", Server: "https://api.gone.example:6443"},
			want: choice{Refuse: "its host does not resolve here"},
		},
		{
			name: "a server with no route",
			f:    facts{Context: "island", Server: "https://198.51.100.1:6443", ServerIP: "198.51.100.1"},
			want: choice{Refuse: "this host has no route to it"},
		},
		{
			name: "RUN_WEBHOOK_HOST of this host's address wins over a remote server",
			f:    facts{Override: "192.0.2.2", Context: "gke_prod", Server: "https://203.0.113.7", ServerIP: "203.0.113.7"},
			want: choice{Host: "192.0.2.2", Bind: "192.0.2.2", IPs: []string{"192.0.2.2"}},
			why:  "RUN_WEBHOOK_HOST=192.0.2.2",
		},
		{
			name: "RUN_WEBHOOK_HOST=localhost on kind: what make run did before",
			f:    facts{Override: "localhost", Context: "kind-kind", Server: "https://127.0.0.1:40123", ServerIP: "127.0.0.1", ServerLoopback: true, Nodes: kind},
			want: choice{Host: "localhost", Bind: "127.0.0.1", DNS: []string{"localhost"}},
		},
		{
			name: "RUN_WEBHOOK_HOST of a name: every address",
			f:    facts{Override: "dev.lan", Context: "x", Server: "https://203.0.113.7", ServerIP: "203.0.113.7"},
			want: choice{Host: "dev.lan", DNS: []string{"dev.lan"}},
			why:  "listens on every address",
		},
		{
			name: "RUN_WEBHOOK_HOST of an address this host does not hold (a NAT in front of it)",
			f:    facts{Override: "198.51.100.9", Context: "x", Server: "https://203.0.113.7", ServerIP: "203.0.113.7"},
			want: choice{Host: "198.51.100.9", IPs: []string{"198.51.100.9"}},
			why:  "not an address of this host",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.Route = table.get
			got := choose(tc.f)
			if tc.want.Refuse != "" {
				if !strings.Contains(got.Refuse, tc.want.Refuse) || !strings.Contains(got.Refuse, "make deploy IMG=") {
					t.Fatalf("choice %+v, want a refusal saying %q and naming make deploy", got, tc.want.Refuse)
				}
				return
			}
			if got.Refuse != "" || got.Host != tc.want.Host || got.Bind != tc.want.Bind ||
				strings.Join(got.IPs, ",") != strings.Join(tc.want.IPs, ",") || strings.Join(got.DNS, ",") != strings.Join(tc.want.DNS, ",") {
				t.Fatalf("choice %+v, want host %q bind %q IPs %v DNS %v", got, tc.want.Host, tc.want.Bind, tc.want.IPs, tc.want.DNS)
			}
			if !strings.Contains(got.Why, tc.why) {
				t.Errorf("why %q does not say %q", got.Why, tc.why)
			}
		})
	}
}

func TestURLHost(t *testing.T) {
	for host, want := range map[string]string{"172.18.0.1": "172.18.0.1", "fd00::1": "[fd00::1]", "localhost": "localhost"} {
		if got := (choice{Host: host}).URLHost(); got != want {
			t.Errorf("%s: %s, want %s", host, got, want)
		}
	}
}

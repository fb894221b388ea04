// Command runhost chooses the address at which the API server of the
// current kubeconfig's cluster can call a manager that make run starts on
// this host: its webhooks and the Drink conversion.
//
// The cluster's API server is often not on this host's loopback even when
// its kubeconfig says 127.0.0.1: kind and minikube's docker driver run it in
// a container behind a port forward, Docker Desktop in a VM. There,
// "localhost" is the container or VM itself, and every Drink write would
// fail. runhost reads the kubeconfig and, for a server on loopback, the
// nodes' addresses, and picks (docs/install.md, "make run"):
//
//   - RUN_WEBHOOK_HOST when set;
//   - Docker Desktop (context docker-desktop): host.docker.internal;
//   - minikube (context minikube, or nodes labelled minikube.k8s.io/name):
//     host.minikube.internal;
//   - a server that is an address of this host: localhost;
//   - a server on a network this host is on (no gateway between): this
//     host's address on that network;
//   - a server on loopback whose node is on a network this host is on (kind,
//     minikube's docker driver): this host's address on that network;
//   - a server on loopback with no such node (a cluster whose API server
//     runs on this host, such as the project's kwok clusters): localhost;
//   - otherwise (a server reached through a gateway: a cloud or remote
//     cluster) no address can work: it exits 3 before make run touches the
//     cluster and prints what works there, make deploy.
//
// It prints HOST= (for the URLs), BIND= (what the manager listens on),
// IPS= (IP SANs the serving certificate needs) and DNS= (extra DNS names),
// one per line, and why on stderr.
//
// Usage: go run ./hack/runhost [-kubeconfig FILE]
package main

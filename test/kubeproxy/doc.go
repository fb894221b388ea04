// Package kubeproxy stands in for kube-proxy on a kwok cluster, whose fake
// nodes run none: it sends each new TCP connection made to a Service's
// ClusterIP and port to one of the Service's ready endpoints, with NAT
// rules in the kernel (nftables, as kube-proxy's nftables mode), so that
// the API server can call a webhook Service at its ClusterIP as it does in
// a real cluster rather than only through its aggregator routing.
//
// It runs in the e2e suite's process, inside the network namespace where
// the cluster's processes and the pod runner's pod IPs live, and must be
// root there. The rules it writes (one nftables table, on the OUTPUT hook)
// apply to every process of that namespace, and only to connections made
// from it: the API server and the tests are local processes, and no packet
// comes in from another host.
//
// It does not do UDP or SCTP, NodePorts, load balancers, external IPs,
// session affinity, traffic policies or topology hints, nor IPv6: a kwok
// cluster's webhook and API Services need none of these.
package kubeproxy

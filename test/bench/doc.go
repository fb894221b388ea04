// Package bench measures the operator against the write limit of the API
// server it runs on: the ceiling of a plain client, the same writes the
// operator makes done by a plain client (the baseline), the operator's own
// convergence, its wasted writes, memory, conversion cost, admission latency
// and leader handover. Every control plane it starts is a project-built
// kube-apiserver and etcd (through envtest), and the operator is the built
// manager binary, run as a subprocess the way `make run-local` runs it.
package bench

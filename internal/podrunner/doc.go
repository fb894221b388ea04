// Package podrunner plays the kubelet for the operator's pods on a kwok
// cluster, whose fake nodes run no containers: it runs each scheduled pod's
// containers from the locally built image under podman on this host's
// network, each pod on host ports of its own, and stands in for a Service
// on loopback in front of the ready pods. The e2e suite and make demo run
// the operator through it.
package podrunner

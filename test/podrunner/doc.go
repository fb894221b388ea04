// Package podrunner plays the kubelet for the operator's pods on a kwok
// cluster, whose fake nodes run no containers: it runs each scheduled pod's
// containers from the locally built image under podman on this host's
// network, each pod on host ports of its own and at its pod IP (on the
// network namespace's loopback device), where a Service's endpoints send
// traffic, and writes each pod's Ready condition from its real readiness
// probe. The e2e suite and make demo run the operator through it.
package podrunner

// Package e2e holds the end-to-end suites, written with
// sigs.k8s.io/e2e-framework, that install the operator into a whole kwok
// cluster built from the project's own Kubernetes binaries, or run against
// an existing cluster given by a kubeconfig.
package e2e

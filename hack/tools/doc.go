// Package tools is the root of the project's tools module: the programs
// the checks and releases run that need dependencies the operator's
// go.mod must not carry. One module holds them all, so that their shared
// dependencies (the Kubernetes libraries at the operator's own versions,
// controller-runtime, Prometheus's client) resolve once and compile once,
// for the tools and the operator alike:
//
//   - certmanager: a launcher of cert-manager's issuing controllers and
//     cainjector, for the e2e feature area=certmanager (make cert-manager);
//   - olm-validate: OLM's bundle validators and the upgrade-graph check
//     (make verify);
//   - registry: make release-push, and a registry on loopback for tests;
//   - Prometheus's promtool, pinned by the tool directive in go.mod and
//     built by make promtool with the build tag remove_all_sd (its plugins
//     package then links no service-discovery SDK, which check rules and
//     test rules never use) into bin/promtool-<version>, for test/alerts.
//
// The Kubernetes binaries (hack/k8s) and the real node's (hack/node) keep
// a module per pinned build: each pins another release of the same
// modules, which one module cannot hold.
package tools

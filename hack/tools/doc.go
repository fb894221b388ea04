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
//   - Prometheus's promtool, helm, controller-gen, cyclonedx-gomod,
//     deadcode, govulncheck and cosign (which signs the release's files
//     and images, hack/sign.sh), each pinned by a tool directive in go.mod, into
//     bin/<tool>-<version> (promtool for test/alerts, with the build tag
//     remove_all_sd: its plugins package then links no service-discovery
//     SDK, which check rules and test rules never use). Built with go
//     install of their own modules, each compiled its own copy of
//     client-go and the Kubernetes APIs on a fresh machine. golangci-lint
//     and kube-score stay with go install: golangci-lint's analyzers are
//     pinned to its own golang.org/x/tools, and kube-score needs API
//     versions that k8s.io/api no longer has.
//
// make tools-module builds all of the above, certmanager included, with
// one go build (make/tools.mk says why).
//
// The other go.mod files each pin another release of modules that one
// module could hold only once (minimal version selection keeps the
// highest), for binaries that must be built at exactly that release:
//
//   - hack/k8s/kube and kube-v1.33 to v1.36: k8s.io/kubernetes and its
//     staging modules, one supported Kubernetes version each (and, in
//     hack/k8s/kube, kwok, built with that control plane's libraries);
//   - hack/k8s/etcd and etcd-v3.5: etcd's server 3.6.16 and 3.5.24, while
//     kube-apiserver v1.37.2 requires etcd's client 3.7.0 and v1.33 3.5.21;
//   - hack/node/containerd and hack/node/cni: containerd v2.4.2 requires
//     the CNI plugins v1.9.1, the node runs the plugins v1.10.0.
package tools

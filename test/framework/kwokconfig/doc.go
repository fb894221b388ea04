// Package kwokconfig writes the kwokctl configuration of the project's kwok
// clusters: the components' settings of hack/kwok/aggregator-routing.yaml,
// how the API server reaches a Service (its aggregator routing, or the
// ClusterIP that test/kubeproxy routes as kube-proxy would), and, for a
// cluster whose pods a pod runner (test/podrunner) really runs, kwok's
// default pod stages changed so that those pods' readiness, containers'
// states and removal after deletion are the runner's, as a kubelet's are.
// The e2e suite and make demo's cluster (hack/dev-cluster.sh, through
// hack/kwokconfig) are made with it.
package kwokconfig

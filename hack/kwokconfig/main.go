// Command kwokconfig writes the kwokctl configuration of a kwok cluster
// whose pods a pod runner runs (test/framework/kwokconfig says what it
// holds): hack/dev-cluster.sh makes make demo's cluster with it, so that
// the demo's operator pods are Ready when their probe says so and are
// removed only once their containers have stopped, as on a kubelet's node.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/example/myoperator/test/framework/kwokconfig"
)

func main() {
	base := flag.String("base", "hack/kwok/aggregator-routing.yaml", "The components' settings.")
	kwokctl := flag.String("kwokctl", "", "The kwokctl binary (its version names kwok's default stages).")
	runnerPods := flag.String("runner-pods", "", "A jq query true for the pods the pod runner runs; empty keeps kwok's default stages.")
	servicePath := flag.String("service-path", string(kwokconfig.Aggregator), "How the API server reaches Services: aggregator or clusterip.")
	out := flag.String("out", "", "File to write.")
	flag.Parse()
	path, err := kwokconfig.ParseServicePath(*servicePath)
	if err == nil && (*out == "" || *kwokctl == "") {
		err = fmt.Errorf("-out and -kwokctl are required")
	}
	if err == nil {
		err = kwokconfig.Write(*out, kwokconfig.Options{Base: *base, Kwokctl: *kwokctl, RunnerPods: *runnerPods, ServicePath: path})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kwokconfig:", err)
		os.Exit(1)
	}
}

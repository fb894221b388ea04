//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/example/myoperator/test/framework/kwokconfig"
	"github.com/example/myoperator/test/framework/shardaudit"
	"github.com/example/myoperator/test/kubeproxy"
)

// runnersPods is a kwok selector's query that is true for the pods the
// suite's pod runner runs, whose readiness, containers' states and removal
// after deletion it does as a kubelet does: the operator's, and the
// Guestbook pulledGuestbook's (stalled_test.go).
var runnersPods = fmt.Sprintf(`(.metadata.namespace == %q) or (.metadata.namespace == "guestbook" and .metadata.labels["app.kubernetes.io/instance"] == %q)`,
	operatorNS, pulledGuestbook)

// writeKwokConfig writes the kwokctl configuration of the suite's cluster
// into dir and returns its path (test/framework/kwokconfig says what it
// holds): the runner's pods left to the runner, the webhook Service
// reached by the path the run asks for (servicePath), and three settings
// of the suite's own.
func writeKwokConfig(dir, kwokctl string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// The audit log of the writes the sharing feature replays.
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(shardaudit.Policy(operatorNS)), 0o644); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kwokctl-stages.yaml")
	return path, kwokconfig.Write(path, kwokconfig.Options{
		Base:        filepath.Join(root, "hack", "kwok", "aggregator-routing.yaml"),
		Kwokctl:     kwokctl,
		RunnerPods:  runnersPods,
		ServicePath: servicePath(),
		Args: []kwokconfig.Arg{
			// The API server sends a replica only its share of the Drinks
			// (sharing_test.go), as a cluster with the alpha feature would.
			{Component: "kube-apiserver", Key: "feature-gates", Value: "ShardedListAndWatch=true"},
			// The garbage collector's log names every item it processes
			// (verbosity 5 in its file only): what uninstall_test.go's
			// gcMissed looks for when a Drink's ConfigMap outlives its CRD.
			{Component: "kube-controller-manager", Key: "vmodule", Value: "garbagecollector=5"},
		},
		AuditPolicy: policy,
	})
}

// stopKubeProxy ends the stand-in for kube-proxy and deletes its rules
// (E2E_SERVICE_PATH=clusterip); nil otherwise.
var stopKubeProxy func() error

// startKubeProxy routes the cluster's ClusterIPs to their ready endpoints
// as kube-proxy does, in the kernel of the suite's network namespace
// (test/kubeproxy), for an API server without aggregator routing.
func startKubeProxy(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	stop, err := kubeproxy.Start(context.WithoutCancel(ctx), kubeproxy.Config{
		Client: cs, Table: "myoperator-kubeproxy-" + runName,
		Logf: func(format string, args ...any) { fmt.Printf("e2e: kube-proxy stand-in: "+format+"\n", args...) },
	})
	if err != nil {
		return ctx, err
	}
	stopKubeProxy = stop
	return ctx, nil
}

// endKubeProxy stops the stand-in after the cluster's last feature.
func endKubeProxy(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	if stopKubeProxy == nil {
		return ctx, nil
	}
	return ctx, stopKubeProxy()
}

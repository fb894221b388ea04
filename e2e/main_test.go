//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"
	"sigs.k8s.io/e2e-framework/third_party/kwok"

	"github.com/example/myoperator/internal/testenv"
)

const clusterName = "myoperator-e2e"

var (
	suite   env.Environment
	root    string
	manager *exec.Cmd
	mgrLog  = &bytes.Buffer{}
)

// TestMain prepares a whole kwok cluster (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kwok nodes) from the project's
// own binaries, installs the operator's CRDs and webhooks, and runs the
// manager; every step is named, and the cluster is deleted at the end.
func TestMain(m *testing.M) {
	var err error
	if root, err = testenv.RepoRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cfg, err := envconf.NewFromFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	suite = env.NewWithConfig(cfg)
	bin := filepath.Join(root, "bin", "k8s", testenv.KubeVersion)
	suite.Setup(
		step("project-built Kubernetes binaries", useBinaries(bin)),
		step("kwok cluster", envfuncs.CreateClusterWithOpts(kwok.NewProvider(), clusterName, kwok.WithPath(filepath.Join(bin, "kwokctl")))),
		step("fake nodes", addNodes(3)),
		step("install CRDs and webhooks (config/local)", kubectlStep("apply", "--server-side", "-k", filepath.Join(root, "config", "local"))),
		step("start the manager", startManager),
	)
	suite.Finish(
		step("stop the manager", stopManager),
		step("delete the cluster", envfuncs.DestroyCluster(clusterName)),
	)
	os.Exit(suite.Run(m))
}

// step names a setup or teardown function in the log.
func step(name string, f env.Func) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		start := time.Now()
		fmt.Printf("e2e: %s...\n", name)
		ctx, err := f(ctx, cfg)
		if err != nil {
			return ctx, fmt.Errorf("%s: %w", name, err)
		}
		fmt.Printf("e2e: %s done in %s\n", name, time.Since(start).Round(time.Millisecond))
		return ctx, nil
	}
}

// useBinaries makes kwokctl run the cluster from the project's binaries.
func useBinaries(dir string) env.Func {
	return func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kwokctl"} {
			if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
				return ctx, fmt.Errorf("%s missing: run make k8s-binaries", b)
			}
		}
		for k, v := range map[string]string{
			"KWOK_RUNTIME":                        "binary",
			"KWOK_ETCD_BINARY":                    filepath.Join(dir, "etcd"),
			"KWOK_KUBE_APISERVER_BINARY":          filepath.Join(dir, "kube-apiserver"),
			"KWOK_KUBE_CONTROLLER_MANAGER_BINARY": filepath.Join(dir, "kube-controller-manager"),
			"KWOK_KUBE_SCHEDULER_BINARY":          filepath.Join(dir, "kube-scheduler"),
			"KWOK_CONTROLLER_BINARY":              filepath.Join(dir, "kwok"),
			"KWOK_WORKDIR":                        filepath.Join(root, "bin", "kwok-e2e"),
		} {
			if err := os.Setenv(k, v); err != nil {
				return ctx, err
			}
		}
		return ctx, nil
	}
}

// kubectl runs kubectl against the suite's cluster and returns its
// standard output, or on failure both outputs.
func kubectl(cfg *envconf.Config, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", cfg.KubeconfigFile()}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String() + errOut.String(), err
	}
	return out.String(), nil
}

func kubectlStep(args ...string) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		if out, err := kubectl(cfg, args...); err != nil {
			return ctx, fmt.Errorf("kubectl %v: %w: %s", args, err, out)
		}
		return ctx, nil
	}
}

func addNodes(n int) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		for i := range n {
			node := fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"kwok-node-%d","annotations":{"kwok.x-k8s.io/node":"fake"},"labels":{"kubernetes.io/hostname":"kwok-node-%d","type":"kwok"}}}`, i, i)
			cmd := exec.Command("kubectl", "--kubeconfig", cfg.KubeconfigFile(), "apply", "-f", "-")
			cmd.Stdin = bytes.NewBufferString(node)
			if out, err := cmd.CombinedOutput(); err != nil {
				return ctx, fmt.Errorf("node %d: %w: %s", i, err, out)
			}
		}
		return kubectlStep("wait", "--for=condition=Ready", "node", "--all", "--timeout=60s")(ctx, cfg)
	}
}

// startManager runs the manager binary (make build) on this host, serving
// its webhooks on https://localhost:9443 with certificates it manages.
func startManager(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	bin := filepath.Join(root, "bin", "manager")
	if _, err := os.Stat(bin); err != nil {
		return ctx, fmt.Errorf("%s missing: run make build", bin)
	}
	manager = exec.Command(bin, "--kubeconfig", cfg.KubeconfigFile(), "--namespace=myoperator-system",
		"--webhook-host=127.0.0.1", "--webhook-extra-dns-names=localhost", "--metrics-bind-address=0",
		"--health-probe-bind-address=127.0.0.1:18081", "--webhook-cert-dir="+filepath.Join(os.TempDir(), "myoperator-e2e-certs"))
	manager.Stdout, manager.Stderr = mgrLog, mgrLog
	if err := manager.Start(); err != nil {
		return ctx, err
	}
	exited := make(chan error, 1)
	go func() { exited <- manager.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-exited:
			return ctx, fmt.Errorf("manager exited: %w\n%s", err, mgrLog.String())
		default:
		}
		out, err := exec.Command("curl", "-fsS", "http://127.0.0.1:18081/readyz").CombinedOutput()
		if err == nil {
			return ctx, nil
		}
		if time.Now().After(deadline) {
			return ctx, fmt.Errorf("manager not ready after 60s: %s\n%s", out, mgrLog.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func stopManager(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	if manager != nil && manager.Process != nil {
		_ = manager.Process.Signal(os.Interrupt)
		time.Sleep(2 * time.Second) // graceful shutdown; Wait runs in startManager's goroutine
	}
	return ctx, nil
}

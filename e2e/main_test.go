//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"
	"sigs.k8s.io/e2e-framework/pkg/types"
	"sigs.k8s.io/e2e-framework/third_party/kwok"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/scheme"
	"github.com/example/myoperator/test/framework/docblocks"
	"github.com/example/myoperator/test/framework/kwokconfig"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/framework/testutil"
	"github.com/example/myoperator/test/podrunner"
)

// runName names this run's cluster, its folders under bin/ and its
// containers (E2E_NAME, "e2e" by default), so that two runs share the
// machine: make ci runs the install ways, in a network namespace of their
// own, beside the e2e suite.
var runName = func() string {
	n := os.Getenv("E2E_NAME")
	if n == "" {
		return "e2e"
	}
	if !regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,30}$`).MatchString(n) {
		fmt.Fprintf(os.Stderr, "e2e: E2E_NAME=%q: want lower-case letters, digits and dashes (it names a cluster, folders and containers)\n", n)
		os.Exit(2)
	}
	return n
}()

// clusterName is the cluster the suite creates.
var clusterName = "myoperator-" + runName

// kwokDir is kwokctl's work directory for the suite's cluster.
func kwokDir() string { return filepath.Join(root, "bin", "kwok-"+runName) }

const (
	operatorNS = "myoperator-system"
	// operatorPods selects the Deployment's pods (config/manager).
	operatorPods = "app.kubernetes.io/name=myoperator,control-plane=controller-manager"
	leaseName    = "myoperator.example.com"
	// operatorDeployment is config/manager's Deployment.
	operatorDeployment = "myoperator-controller-manager"
)

var (
	suite  env.Environment
	root   string
	logDir string
	runner *podrunner.Runner
	// stopRunner ends the pod runner; runnerDone closes when it stopped
	// every container.
	stopRunner context.CancelFunc
	runnerDone chan struct{}
	// kc reads and writes the operator's types (typed, with the project's
	// scheme); cs is client-go for the core API.
	kc         client.Client
	cs         kubernetes.Interface
	restConfig *rest.Config
	// failed is set by any failed feature, for the log collection at the
	// end.
	failed atomic.Bool
)

// TestMain prepares the cluster the features run on, as a list of named,
// timed steps. By default that is a whole kwok cluster (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, kwok nodes) from
// the project's own binaries: it builds the operator's image, installs
// the production config/default with kubectl and runs the Deployment's
// pods from the image under podman, each serving at its pod IP, where the
// API server reaches the webhook Service's ready endpoints (through its
// ClusterIP and the suite's stand-in for kube-proxy with
// E2E_SERVICE_PATH=clusterip, or by aggregator routing); the cluster is deleted at the end unless
// E2E_KEEP_CLUSTER=1. With E2E_NODE=real the cluster has one real node
// instead (hack/node/node.sh): the images go into its containerd, the
// production config/default is installed unmodified and the kubelet runs
// the operator's and the Guestbook's pods. With an existing cluster (--kubeconfig or
// E2E_KUBECONFIG) it creates and deletes nothing: it installs the operator
// with make deploy, or with E2E_SKIP_INSTALL=1 checks that it is there and
// ready. After each feature that passed, kubectl myoperator doctor
// (built once in the setup) must report nothing within a minute
// (plugin_test.go). On a failure the logs it can reach are collected. It ends with a
// summary of what ran and what was skipped, and why.
func TestMain(m *testing.M) {
	start := time.Now()
	var err error
	if root, err = testutil.FindRepoRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	logDir = filepath.Join(root, "bin", runName+"-logs")
	cfg, err := envconf.NewFromFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if mode, err = readMode(kubeconfigFlag(cfg)); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	fmt.Printf("e2e: cluster: %s\n", mode)
	if !mode.created() {
		cfg.WithKubeconfigFile(mode.kubeconfig)
	}
	suite = env.NewWithConfig(cfg)
	switch {
	case mode.realNode:
		bin := filepath.Join(root, "bin", "k8s", testenv.KubeVersion)
		images := []env.Func{
			step("operator image (podman build) imported into the node's containerd", buildImage),
			step("Guestbook server image (podman build) imported into the node's containerd", buildGuestbookImage),
		}
		if mode.install != installKustomize {
			// containerd pulls from the loopback registry itself: it
			// speaks plain HTTP to a loopback host.
			images = []env.Func{step("release files (dist/) pushed to a registry on loopback, which containerd pulls from", publishRelease)}
		}
		suite.Setup(append(append([]env.Func{
			step("kubectl plugin (go build ./kubectl-myoperator, on PATH for kubectl myoperator doctor after each feature)", buildPlugin),
			step("Kubernetes binaries (built when missing)", useBinaries(bin)),
			step("cluster with a real node (hack/node/node.sh up: containerd, kubelet, kube-proxy)", startNode),
			step("clients", makeClients)},
			images...),
			step("install ("+installDescription()+")", install),
			step("operator ready: 2 pods Ready through the kubelet's probes, Lease held", operatorReady),
			step("the node and the operator's containers", printNode),
		)...)
	case mode.created():
		bin := filepath.Join(root, "bin", "k8s", testenv.KubeVersion)
		image := step("operator image (podman build)", buildImage)
		if mode.install != installKustomize {
			image = step("release files (dist/) pushed to a registry on loopback (bin/registry push, as make release-push)", publishRelease)
		}
		cluster := []env.Func{
			step("kubectl plugin (go build ./kubectl-myoperator, on PATH for kubectl myoperator doctor after each feature)", buildPlugin),
			step("Kubernetes binaries (built when missing)", useBinaries(bin)),
			step("kwok cluster ("+string(servicePath())+" service path; operator pods made Ready, and removed after deletion, by the pod runner)", createCluster(bin)),
			step("clients", makeClients),
		}
		if servicePath() == kwokconfig.ClusterIP {
			cluster = append(cluster, step("kube-proxy stand-in (test/kubeproxy: nftables rules from the Services' ready endpoints)", startKubeProxy))
		}
		suite.Setup(append(cluster,
			step("fake nodes", addNodes(3)),
			image,
			step("Guestbook server image (podman build)", buildGuestbookImage),
			step("pod runner (each pod at its pod IP)", startRunner),
			step("install ("+installDescription()+")", install),
			step("operator ready: 2 pods from the image, Lease held", operatorReady),
		)...)
	default:
		setup := []env.Func{step("kubectl plugin (go build ./kubectl-myoperator, on PATH for kubectl myoperator doctor after each feature)", buildPlugin), step("existing cluster: clients, API server ready", existingCluster)}
		if mode.fakeNodes > 0 {
			setup = append(setup, step(fmt.Sprintf("fake nodes (E2E_FAKE_NODES=%d)", mode.fakeNodes), addNodes(mode.fakeNodes)))
		}
		if mode.skipInstall {
			setup = append(setup, step("operator found installed and ready (E2E_SKIP_INSTALL=1)", foundInstalled))
		} else {
			setup = append(setup,
				step("install (make "+strings.Join(deployArgs(), " ")+")", install),
				step("operator ready: every replica Ready, Lease held", operatorReady))
		}
		suite.Setup(setup...)
	}
	suite.AfterEachFeature(func(ctx context.Context, cfg *envconf.Config, t *testing.T, f types.Feature) (context.Context, error) {
		results.Lock()
		if results.ran == nil {
			results.ran = map[string]bool{}
		}
		results.ran[f.Name()] = true
		results.Unlock()
		if t.Failed() {
			failed.Store(true)
		}
		return doctorAfterFeature(ctx, cfg, t, f)
	})
	finish := []env.Func{
		step("collect logs on failure", collectLogs),
		step("stop the operator's containers", stopOperator),
		stopRegistry,
		endKubeProxy,
	}
	switch {
	case !mode.created():
		finish = append(finish, leaveCluster)
	case os.Getenv("E2E_KEEP_CLUSTER") == "1":
		finish = append(finish, keepCluster)
	case mode.realNode:
		finish = append(finish, step("stop the node and delete the cluster (hack/node/node.sh down)", stopNode))
	default:
		finish = append(finish, step("delete the cluster", envfuncs.DestroyCluster(clusterName)))
	}
	suite.Finish(finish...)
	code := suite.Run(m)
	printSummary(code)
	fmt.Printf("e2e: suite total time %s (exit %d)\n", time.Since(start).Round(time.Second), code)
	os.Exit(code)
}

// step names a setup or teardown function in the log and times it.
func step(name string, f env.Func) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		start := time.Now()
		fmt.Printf("e2e: %s...\n", name)
		ctx, err := f(ctx, cfg)
		if err != nil {
			failed.Store(true)
			return ctx, fmt.Errorf("%s: %w", name, err)
		}
		fmt.Printf("e2e: %s done in %s\n", name, time.Since(start).Round(time.Millisecond))
		return ctx, nil
	}
}

// useBinaries builds whichever pinned Kubernetes binary is missing
// (hack/build-k8s.sh; make test-e2e has already run it outside the
// network namespace, where the module proxy is reachable, so here it only
// checks) and makes kwokctl run the cluster from them.
func useBinaries(dir string) env.Func {
	return func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		cmd := exec.Command(filepath.Join(root, "hack", "build-k8s.sh"), dir)
		cmd.Env = append(os.Environ(), "KUBE_VERSION="+testenv.KubeVersion)
		if out, err := cmd.CombinedOutput(); err != nil {
			return ctx, fmt.Errorf("hack/build-k8s.sh (run make k8s-binaries outside the network namespace first): %w: %s", err, out)
		}
		for k, v := range map[string]string{
			"KWOK_RUNTIME":                        "binary",
			"KWOK_ETCD_BINARY":                    filepath.Join(dir, "etcd"),
			"KWOK_KUBE_APISERVER_BINARY":          filepath.Join(dir, "kube-apiserver"),
			"KWOK_KUBE_CONTROLLER_MANAGER_BINARY": filepath.Join(dir, "kube-controller-manager"),
			"KWOK_KUBE_SCHEDULER_BINARY":          filepath.Join(dir, "kube-scheduler"),
			"KWOK_CONTROLLER_BINARY":              filepath.Join(dir, "kwok"),
			"KWOK_WORKDIR":                        kwokDir(),
		} {
			if err := os.Setenv(k, v); err != nil {
				return ctx, err
			}
		}
		return ctx, nil
	}
}

// createCluster creates the kwok cluster from the project's binaries with
// the suite's pod stages (writeKwokConfig).
func createCluster(bin string) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		kwokctl := filepath.Join(bin, "kwokctl")
		path, err := writeKwokConfig(kwokDir(), kwokctl)
		if err != nil {
			return ctx, err
		}
		// kube-controller-manager gives up and exits when the API server
		// is not healthy within about 20 s of its start, and kwokctl
		// starts it only once (a kubelet would restart its static pod):
		// on a loaded machine (make ci's other suites) the cluster then
		// runs without it, and no Deployment gets a pod. Such a cluster
		// is made again, at most twice.
		for attempt := 1; ; attempt++ {
			if ctx, err = envfuncs.CreateClusterWithConfig(kwok.NewProvider(), clusterName, path, kwok.WithPath(kwokctl))(ctx, cfg); err != nil {
				return ctx, err
			}
			err = controllerManagerStarted(ctx, cfg)
			if err == nil || attempt == 3 {
				return ctx, err
			}
			fmt.Printf("e2e: %v; creating the cluster again\n", err)
			if ctx, err = envfuncs.DestroyCluster(clusterName)(ctx, cfg); err != nil {
				return ctx, err
			}
		}
	}
}

// controllerManagerStarted waits until kube-controller-manager of the
// suite's cluster has started its controllers (the service account
// controller has made the default namespace's ServiceAccount), and fails
// at once when its process has exited, quoting the last line of its log.
func controllerManagerStarted(ctx context.Context, cfg *envconf.Config) error {
	dir := filepath.Join(kwokDir(), "clusters", clusterName)
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.KubeconfigFile())
	if err != nil {
		return err
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := c.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return nil
		}
		if raw, err := os.ReadFile(filepath.Join(dir, "pids", "kube-controller-manager.pid")); err == nil {
			if _, err := os.Stat("/proc/" + strings.TrimSpace(string(raw))); err != nil {
				log, _ := os.ReadFile(filepath.Join(dir, "logs", "kube-controller-manager.log"))
				lines := strings.Split(strings.TrimSpace(string(log)), "\n")
				return fmt.Errorf("kube-controller-manager exited: %s", lines[len(lines)-1])
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("kube-controller-manager made no default ServiceAccount within 2m (logs in %s)", filepath.Join(dir, "logs"))
		}
		time.Sleep(time.Second)
	}
}

func makeClients(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	// client-go's default of 5 requests per second would make the
	// suite's load (500 Drinks) measure the client, not the operator.
	rc := rest.CopyConfig(cfg.Client().RESTConfig())
	rc.QPS, rc.Burst = 500, 1000
	restConfig = rc
	var err error
	if kc, err = client.New(rc, client.Options{Scheme: scheme.New()}); err != nil {
		return ctx, err
	}
	cs, err = kubernetes.NewForConfig(rc)
	return ctx, err
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
			node := fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"kwok-node-%d","annotations":{"kwok.x-k8s.io/node":"fake"},"labels":{"kubernetes.io/hostname":"kwok-node-%d","type":"kwok"}}`, i, i)
			if mode.created() {
				// kwok gives pods IPs from their node's pod CIDR, and the
				// pod runner serves them in this network namespace: a range
				// of the suite's own, apart from make demo's (10.245/16).
				cidr := fmt.Sprintf("10.244.%d.0/24", i)
				node += fmt.Sprintf(`,"spec":{"podCIDR":%q,"podCIDRs":[%q]}`, cidr, cidr)
			}
			node += "}"
			if out, err := apply(cfg, node); err != nil {
				return ctx, fmt.Errorf("node %d: %w: %s", i, err, out)
			}
		}
		return kubectlStep("wait", "--for=condition=Ready", "node", "--all", "--timeout=60s")(ctx, cfg)
	}
}

// operatorImages are the images of the operator's pod template as the
// suite's install (installedConfig) renders it.
func operatorImages() ([]string, error) {
	dir := installedConfig()
	out, err := exec.Command("kubectl", "kustomize", filepath.Join(root, dir)).Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl kustomize %s: %w", dir, err)
	}
	seen := map[string]bool{}
	var images []string
	for line := range strings.Lines(string(out)) {
		if img, ok := strings.CutPrefix(strings.TrimSpace(line), "image: "); ok && strings.Contains(img, "myoperator") && !seen[img] {
			seen[img] = true
			images = append(images, img)
		}
	}
	if len(images) == 0 {
		return nil, fmt.Errorf("%s names no operator image", dir)
	}
	return images, nil
}

// buildImage builds the image that the install's pod template names from
// the project's Dockerfile (FROM scratch, offline) and the binaries make
// build wrote.
func buildImage(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	for _, b := range []string{"manager", "bootstrap"} {
		if _, err := os.Stat(filepath.Join(root, "bin", b)); err != nil {
			return ctx, fmt.Errorf("bin/%s missing: run make build", b)
		}
	}
	images, err := operatorImages()
	if err != nil {
		return ctx, err
	}
	args := podrunner.Podman("build", "-q")
	for _, img := range images {
		args = append(args, "-t", img)
	}
	cmd := exec.Command(args[0], append(args[1:], root)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return ctx, fmt.Errorf("%w: %s", err, out)
	}
	fmt.Printf("e2e: image %s\n", strings.Join(images, ", "))
	if mode.realNode {
		return ctx, importImages(images...)
	}
	return ctx, nil
}

// startRunner starts the pod runner: the operator's pods under podman,
// each serving its container ports at its pod IP, where the webhook
// Service's endpoints send the API server; and the pods of the Guestbook
// pulledGuestbook, each in a network of its own.
func startRunner(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	if err := os.RemoveAll(logDir); err != nil {
		return ctx, err
	}
	var err error
	runner, err = podrunner.New(podrunner.Config{
		Client: cs, Namespace: operatorNS, Selector: operatorPods, APIServer: cfg.Client().RESTConfig().Host,
		Also:     []podrunner.Target{{Namespace: operatorNS, Selector: helmTestPod}},
		Isolated: []podrunner.Target{{Namespace: "guestbook", Selector: "app.kubernetes.io/instance=" + pulledGuestbook}},
		Dir:      logDir, ContainerPrefix: runName + "-", PodIPs: true, PullFrom: release.registry, Logf: func(format string, args ...any) { fmt.Printf("e2e: "+format+"\n", args...) },
	})
	if err != nil {
		return ctx, err
	}
	var runCtx context.Context
	runCtx, stopRunner = context.WithCancel(context.Background())
	runnerDone = make(chan struct{})
	go func() {
		defer close(runnerDone)
		runner.Run(runCtx)
	}()
	return ctx, nil
}

// install installs the operator: on the suite's cluster with kubectl
// apply -k config/default; on an existing one with make deploy
// (deployArgs), as a user would.
func install(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	if mode.created() && mode.install != installKustomize {
		return installRelease(ctx, cfg)
	}
	if mode.created() {
		return kubectlStep("apply", "--server-side", "-k", filepath.Join(root, installedConfig()))(ctx, cfg)
	}
	if out, err := makeTarget(cfg, deployArgs()...); err != nil {
		return ctx, fmt.Errorf("make %s: %w\n%s", strings.Join(deployArgs(), " "), err, out)
	}
	return ctx, nil
}

// ocBeforeSuite says whether OperatorConfig cluster existed before the
// suite installed anything (only ever on an existing cluster).
var ocBeforeSuite bool

// existingCluster makes the clients for a cluster the suite did not create
// and checks that its API server is ready.
func existingCluster(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	ctx, err := makeClients(ctx, cfg)
	if err != nil {
		return ctx, err
	}
	if body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
		return ctx, fmt.Errorf("API server %s not ready: %w: %s", restConfig.Host, err, body)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		return ctx, err
	}
	ocBeforeSuite = kc.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, &operatorv1alpha1.OperatorConfig{}) == nil
	fmt.Printf("e2e: API server %s, Kubernetes %s; OperatorConfig %s present: %t\n", restConfig.Host, v.GitVersion, operatorv1alpha1.SingletonName, ocBeforeSuite)
	return ctx, nil
}

// foundInstalled checks, with E2E_SKIP_INSTALL=1, that the operator is
// installed and ready: its CRDs established, every replica of its
// Deployment Ready, a leader holding the Lease, and its webhooks answering
// (a server-side dry run of a Drink written through v1alpha1 passes the
// mutating and validating webhooks and the conversion webhook).
func foundInstalled(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	args := []string{"wait", "--for=condition=Established", "--timeout=10s"}
	for _, crd := range operatorCRDs {
		args = append(args, "crd/"+crd)
	}
	if out, err := kubectl(cfg, args...); err != nil {
		return ctx, fmt.Errorf("the operator's CRDs: %w: %s (E2E_SKIP_INSTALL=1 needs the operator installed; without it the suite installs it with make deploy)", err, out)
	}
	if err := kc.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: operatorDeployment}, &appsv1.Deployment{}); err != nil {
		return ctx, fmt.Errorf("Deployment %s/%s: %w", operatorNS, operatorDeployment, err)
	}
	if err := waitOperatorReady(ctx, 2*time.Minute); err != nil {
		return ctx, err
	}
	var out string
	var err error
	deadline := time.Now().Add(time.Minute)
	for {
		cmd := exec.Command("kubectl", "--kubeconfig", cfg.KubeconfigFile(), "create", "--dry-run=server", "-o", "name", "-f", "-")
		cmd.Stdin = strings.NewReader("apiVersion: example.com/v1alpha1\nkind: Drink\nmetadata: {name: e2e-webhook-check, namespace: default}\nspec: {name: Check, drink: tea}\n")
		var b []byte
		b, err = cmd.Output()
		out = string(b)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		return ctx, fmt.Errorf("the webhooks do not answer: a server-side dry run of a v1alpha1 Drink failed: %w", err)
	}
	fmt.Printf("e2e: the webhooks answer: %s (server-side dry run through v1alpha1)\n", strings.TrimSpace(out))
	return ctx, nil
}

// operatorReady waits until every replica the Deployment asks for is ready
// and one holds the Lease.
func operatorReady(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	return ctx, waitOperatorReady(ctx, 3*time.Minute)
}

// waitOperatorReady waits until as many operator pods as the Deployment
// asks for are ready (answer /readyz under the suite's runner, or on an
// existing cluster have the Ready condition) and one of them holds the
// Lease.
func waitOperatorReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		replicas := -1
		d := &appsv1.Deployment{}
		if err := kc.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: operatorDeployment}, d); err == nil && d.Spec.Replicas != nil {
			replicas = int(*d.Spec.Replicas)
		}
		pods, err := operatorPodList(ctx)
		ready := 0
		var names []string
		for _, p := range pods {
			names = append(names, p.name)
			if p.ready {
				ready++
			}
		}
		holder, _ := leaseHolder(ctx)
		if err == nil && ready == replicas && len(pods) == replicas && slices.Contains(names, holder) {
			// Ready pods are not yet endpoints everywhere: kube-proxy
			// programs the Service a moment after the EndpointSlice
			// changes, and until then the API server's webhook calls are
			// refused.
			took, err := webhooksAnswer(ctx, time.Until(deadline)+5*time.Second)
			if err != nil {
				return err
			}
			fmt.Printf("e2e: %d operator pods ready, leader %s; the webhooks answer %s later\n", ready, holder, took.Round(time.Millisecond))
			return nil
		}
		if time.Now().After(deadline) {
			where := logDir
			if runner == nil {
				where = "kubectl get pods,events -n " + operatorNS
			}
			if err != nil {
				return fmt.Errorf("operator pods after %s: %w", timeout, err)
			}
			return fmt.Errorf("%d of %d operator pods ready (pods %v), lease holder %q after %s; see %s%s", ready, replicas, names, holder, timeout, where, runnerLogTails(6))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// runDocBlock runs the commands of a document's block (ref is
// <file>::<ID>, test/framework/docblocks) as written, one after another in
// a shell in dir (the repository when empty), against the suite's cluster
// (KUBECONFIG), and returns their output. A command that fails, or runs
// past a minute, fails the test.
func runDocBlock(t *testing.T, cfg *envconf.Config, ref, dir string) string {
	t.Helper()
	b, err := docblocks.Get(root, ref)
	if err != nil {
		t.Fatal(err)
	}
	if dir == "" {
		dir = root
	}
	var all strings.Builder
	for _, c := range b.Commands() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, "sh", "-c", c)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "KUBECONFIG="+cfg.KubeconfigFile())
		out, err := cmd.CombinedOutput()
		cancel()
		fmt.Fprintf(&all, "$ %s\n%s", c, out)
		if err != nil {
			t.Fatalf("%s:%d: %s: %v\n%s", b.File, b.Line, c, err, out)
		}
	}
	fmt.Printf("e2e: %s, run as written:\n%s", ref, all.String())
	return all.String()
}

// runnerLogTails is the last lines of each container log of the runner's
// pods, for a failure message: CI keeps the messages, not bin/e2e-logs.
func runnerLogTails(lines int) string {
	if runner == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range runner.Pods() {
		for c := range p.Names {
			data, err := os.ReadFile(runner.LogFile(p.Pod, c))
			if err != nil {
				fmt.Fprintf(&b, "\n%s/%s: %v", p.Pod, c, err)
				continue
			}
			all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
			fmt.Fprintf(&b, "\n%s/%s (ready %t, restarts %d), its last lines:", p.Pod, c, p.Ready, p.Restarts)
			for _, l := range all[max(0, len(all)-lines):] {
				if len(l) > 300 {
					l = l[:300] + "..."
				}
				b.WriteString("\n  " + l)
			}
		}
	}
	return b.String()
}

// webhooksAnswer waits until a server-side dry run of a v1 Drink passes
// the admission webhooks, and says how long that took.
func webhooksAnswer(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	for {
		d := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "e2e-webhook-check"},
			Spec: drinksv1.DrinkSpec{DisplayName: "Check", Beverage: "tea"}}
		err := kc.Create(ctx, d, client.DryRunAll)
		if err == nil {
			return time.Since(start), nil
		}
		if time.Since(start) > timeout {
			return 0, fmt.Errorf("the operator's pods are ready, but a server-side dry run of a v1 Drink still fails after %s: %w", timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// leaseHolder is the pod that holds the operator's Lease (its identity is
// the pod's hostname plus a suffix).
func leaseHolder(ctx context.Context) (string, error) {
	l, err := leaseOf(ctx)
	if err != nil {
		return "", err
	}
	return holderPod(l), nil
}

// holderPod is the pod named by the Lease's holder identity, or "".
func holderPod(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	pod, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
	return pod
}

// collectLogs, after a failure, prints the end of every operator
// container's log, the cluster's events and pods, and exports the
// control plane's logs next to the container logs.
func collectLogs(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	if !failed.Load() {
		return ctx, nil
	}
	if runner == nil && !mode.realNode {
		fmt.Printf("e2e: the operator's container logs: not collected (%s)\n", noLogs())
	}
	if mode.realNode {
		printNodeLogs(ctx, cfg)
	}
	for _, f := range runnerLogFiles() {
		data, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Printf("----- %s (last %d of %d lines)\n", filepath.Base(f), min(40, len(lines)), len(lines))
		fmt.Println(strings.Join(lines[max(0, len(lines)-40):], "\n"))
	}
	out, _ := kubectl(cfg, "get", "pods,events", "-A", "-o", "wide")
	fmt.Printf("----- pods and events\n%s", out)
	if !mode.created() || mode.realNode {
		return ctx, nil
	}
	dest := filepath.Join(logDir, "cluster")
	if _, err := envfuncs.ExportClusterLogs(clusterName, dest)(ctx, cfg); err != nil {
		fmt.Printf("e2e: exporting cluster logs: %v\n", err)
	}
	fmt.Printf("e2e: logs in %s\n", logDir)
	return ctx, nil
}

// runnerLogFiles are the suite's runner's container logs, if it runs the
// pods.
func runnerLogFiles() []string {
	if runner == nil {
		return nil
	}
	return runner.LogFiles()
}

func stopOperator(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	if stopRunner != nil {
		stopRunner()
		<-runnerDone
	}
	return ctx, nil
}

// leaveCluster ends a run on an existing cluster: nothing is deleted.
func leaveCluster(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	if mode.skipInstall {
		fmt.Printf("e2e: the existing cluster and its operator stay as they are\n")
	} else {
		fmt.Printf("e2e: the existing cluster stays; the operator the suite installed stays too (KUBECONFIG=%s make undeploy removes it)\n", mode.kubeconfig)
	}
	return ctx, nil
}

func keepCluster(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	fmt.Printf("e2e: E2E_KEEP_CLUSTER=1: cluster %s kept; KUBECONFIG=%s (inside the network namespace: hack/netns.sh myoperator-test kubectl ...); delete it with KWOK_WORKDIR=%s %s delete cluster --name %s\n",
		clusterName, cfg.KubeconfigFile(), kwokDir(), filepath.Join(root, "bin", "k8s", testenv.KubeVersion, "kwokctl"), clusterName)
	return ctx, nil
}

// leaseOf returns the operator's Lease.
func leaseOf(ctx context.Context) (*coordinationv1.Lease, error) {
	l := &coordinationv1.Lease{}
	return l, kc.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: leaseName}, l)
}

// kubeconfigFlag is the value of --kubeconfig. e2e-framework registers the
// flag only when no package did before it; controller-runtime's client
// config package does (its init), so the value lands in that flag and
// e2e-framework's own stays empty: read the registered flag.
func kubeconfigFlag(cfg *envconf.Config) string {
	if k := cfg.KubeconfigFile(); k != "" {
		return k
	}
	if f := flag.Lookup("kubeconfig"); f != nil {
		return f.Value.String()
	}
	return ""
}

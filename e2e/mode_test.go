//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/example/myoperator/test/framework/kwokconfig"
	"github.com/example/myoperator/test/podrunner"
)

// suiteMode is how the suite meets its cluster: the kwok cluster it
// creates (the default), or an existing one named by e2e-framework's
// --kubeconfig flag or E2E_KUBECONFIG.
type suiteMode struct {
	// kubeconfig of the existing cluster; "" when the suite creates one.
	kubeconfig string
	// skipInstall (E2E_SKIP_INSTALL=1): the operator is used as found.
	skipInstall bool
	// destructive (E2E_ALLOW_DESTRUCTIVE=1): features that delete
	// cluster-wide objects may run on an existing cluster.
	destructive bool
	// fakeNodes (E2E_FAKE_NODES=N) kwok nodes are added to an existing
	// cluster.
	fakeNodes int
	// img and deployConfig are make deploy's IMG and DEPLOY_CONFIG on an
	// existing cluster (E2E_IMG, E2E_DEPLOY_CONFIG); "" leaves the
	// Makefile's default.
	img, deployConfig string
	// realNode (E2E_NODE=real): the cluster the suite creates has one real
	// node (containerd, kubelet, kube-proxy: hack/node/node.sh) instead of
	// kwok nodes, and the operator goes in as config/default, the
	// production manifests, its pods run by the kubelet.
	realNode bool
	// install (E2E_INSTALL) is how the suite installs the operator on the
	// cluster it creates: kustomize (the default), manifest or helm
	// (installways_test.go).
	install string
	// servicePath (E2E_SERVICE_PATH) is how the API server of the kwok
	// cluster the suite creates reaches the webhook Service: aggregator
	// (the default; it calls the ready endpoints itself) or clusterip (it
	// calls the ClusterIP, which the suite routes as kube-proxy does,
	// test/kubeproxy).
	servicePath kwokconfig.ServicePath
}

// mode is set by TestMain before any feature runs.
var mode suiteMode

// created says whether the suite created the cluster: then it runs the
// operator's pods itself, under podman, and deletes the cluster at the end.
func (m suiteMode) created() bool { return m.kubeconfig == "" }

// readMode reads the mode from the environment and the --kubeconfig flag
// (flagKubeconfig). A relative kubeconfig path is taken from the current
// directory (go test runs in e2e/) or else from the repository root.
func readMode(flagKubeconfig string) (suiteMode, error) {
	m := suiteMode{
		kubeconfig:   flagKubeconfig,
		skipInstall:  os.Getenv("E2E_SKIP_INSTALL") == "1",
		destructive:  os.Getenv("E2E_ALLOW_DESTRUCTIVE") == "1",
		img:          os.Getenv("E2E_IMG"),
		deployConfig: os.Getenv("E2E_DEPLOY_CONFIG"),
	}
	switch n := os.Getenv("E2E_NODE"); n {
	case "", "kwok":
	case "real":
		m.realNode = true
	default:
		return m, fmt.Errorf("E2E_NODE=%q: want kwok (the default) or real", n)
	}
	if m.kubeconfig == "" {
		m.kubeconfig = os.Getenv("E2E_KUBECONFIG")
	}
	switch m.install = os.Getenv("E2E_INSTALL"); m.install {
	case "":
		m.install = installKustomize
	case installKustomize, installManifest, installHelm:
	default:
		return m, fmt.Errorf("E2E_INSTALL=%q: want kustomize (the default), manifest or helm", m.install)
	}
	if m.install != installKustomize && !m.created() {
		return m, fmt.Errorf("E2E_INSTALL=%s installs a release's files on the cluster the suite creates; on an existing cluster the suite installs with make deploy", m.install)
	}
	m.servicePath = kwokconfig.Aggregator
	if p := os.Getenv("E2E_SERVICE_PATH"); p != "" {
		var err error
		if m.servicePath, err = kwokconfig.ParseServicePath(p); err != nil {
			return m, fmt.Errorf("E2E_SERVICE_PATH: %w", err)
		}
		if m.realNode || !m.created() {
			return m, fmt.Errorf("E2E_SERVICE_PATH=%s is for the kwok cluster the suite creates; a real node's kube-proxy and an existing cluster route Services their own way", p)
		}
	}
	if n := os.Getenv("E2E_FAKE_NODES"); n != "" {
		if _, err := fmt.Sscan(n, &m.fakeNodes); err != nil || m.fakeNodes < 0 {
			return m, fmt.Errorf("E2E_FAKE_NODES=%q: want a number of nodes", n)
		}
	}
	if m.realNode && !m.created() {
		return m, fmt.Errorf("E2E_NODE=real starts a cluster with a real node; it does not go with an existing cluster (E2E_KUBECONFIG or --kubeconfig)")
	}
	if m.created() {
		for _, v := range []string{"E2E_SKIP_INSTALL", "E2E_ALLOW_DESTRUCTIVE", "E2E_FAKE_NODES", "E2E_IMG", "E2E_DEPLOY_CONFIG"} {
			if os.Getenv(v) != "" {
				return m, fmt.Errorf("%s is for an existing cluster (E2E_KUBECONFIG or --kubeconfig); the cluster the suite creates is always installed, destroyed and given 3 kwok nodes", v)
			}
		}
		return m, nil
	}
	if !filepath.IsAbs(m.kubeconfig) {
		if _, err := os.Stat(m.kubeconfig); err != nil {
			m.kubeconfig = filepath.Join(root, m.kubeconfig)
		}
	}
	abs, err := filepath.Abs(m.kubeconfig)
	if err != nil {
		return m, err
	}
	m.kubeconfig = abs
	if _, err := os.Stat(m.kubeconfig); err != nil {
		return m, fmt.Errorf("kubeconfig of the existing cluster: %w", err)
	}
	return m, nil
}

func (m suiteMode) String() string {
	if m.realNode {
		return "the cluster the suite creates with one real node, E2E_NODE=real (containerd, kubelet, kube-proxy from hack/node/node.sh; operator installed with " + installDescription() + "; its pods run by the kubelet)"
	}
	if m.created() {
		route := "the API server calls the webhook Service's ready endpoints: aggregator routing, as kwok nodes run no kube-proxy"
		if m.servicePath == kwokconfig.ClusterIP {
			route = "the API server calls the webhook Service's ClusterIP, which the suite's stand-in for kube-proxy (test/kubeproxy) sends to a ready endpoint, E2E_SERVICE_PATH=clusterip"
		}
		return "the kwok cluster the suite creates, E2E_NODE=kwok (operator installed with " + installDescription() + "; its pods run by the suite under podman, each at its pod IP, where " + route + ")"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "existing cluster %s (", m.kubeconfig)
	if m.skipInstall {
		b.WriteString("operator used as found, E2E_SKIP_INSTALL=1")
	} else {
		fmt.Fprintf(&b, "operator installed with make %s", strings.Join(deployArgs(), " "))
	}
	if m.destructive {
		b.WriteString("; E2E_ALLOW_DESTRUCTIVE=1")
	}
	if m.fakeNodes > 0 {
		fmt.Fprintf(&b, "; %d kwok nodes added", m.fakeNodes)
	}
	b.WriteString("; the suite runs none of its pods)")
	return b.String()
}

// deployArgs are the arguments of the make deploy that installs the
// operator: on the suite's cluster the suite's image and config/default; on an
// existing one E2E_IMG and E2E_DEPLOY_CONFIG, or the Makefile's defaults.
func deployArgs() []string {
	args := []string{"deploy"}
	if mode.created() {
		dir := installedConfig()
		images, err := operatorImages()
		if err != nil || len(images) == 0 {
			return append(args, "IMG=("+dir+" names no image)", "DEPLOY_CONFIG="+dir)
		}
		return append(args, "IMG="+images[0], "DEPLOY_CONFIG="+dir)
	}
	if mode.img != "" {
		args = append(args, "IMG="+mode.img)
	}
	if mode.deployConfig != "" {
		args = append(args, "DEPLOY_CONFIG="+mode.deployConfig)
	}
	return args
}

// destructive is "" when a feature that deletes cluster-wide objects
// (what) may run: on the suite's own cluster, or when asked with
// E2E_ALLOW_DESTRUCTIVE=1. Otherwise it says why the feature is skipped.
func destructive(what string) string {
	if mode.created() || mode.destructive {
		return ""
	}
	return what + ", on a cluster the suite did not create: set E2E_ALLOW_DESTRUCTIVE=1 to allow it"
}

// reinstalls is "" when the suite can install the operator again after a
// feature removed it, which it cannot when it was told to use the operator
// as found (it does not know how it was installed).
func reinstalls() string {
	if !mode.skipInstall {
		return ""
	}
	return "it installs the operator again afterwards, and with E2E_SKIP_INSTALL=1 the suite does not know how it was installed (without it the suite installs with make deploy, E2E_IMG and E2E_DEPLOY_CONFIG)"
}

// ownCluster is "" on the cluster the suite created, where its pod runner
// runs the operator's pods from images it builds.
func ownCluster(what string) string {
	if mode.created() {
		return ""
	}
	return what + ", which it does only on the cluster it creates"
}

// noLogs is "" when the suite can read the operator's container logs:
// from its own pod runner, or on its real node from the kubelet (kubectl
// logs). Against an existing cluster it does not run the pods.
func noLogs() string {
	if runner != nil || mode.realNode {
		return ""
	}
	return "the manager's log is read from the suite's pod runner, and on a cluster the suite did not create it does not run the operator's pods"
}

// results collects, for the suite's closing summary, what each feature did
// and why anything was skipped.
var results struct {
	sync.Mutex
	features []featureResult
	// ran holds the features that e2e-framework ran (not filtered out by
	// --labels or --feature).
	ran map[string]bool
	// skips are the assessments skipped by skip, with their reasons.
	skips []string
}

type featureResult struct{ name, state, reason string }

// runFeature tests a feature unless one of needs (reasons from destructive,
// reinstalls...) is not empty: then the test is skipped with that reason,
// shown by go test -v and in the suite's summary.
func runFeature(t *testing.T, f features.Feature, needs ...string) {
	t.Helper()
	var unmet []string
	for _, why := range append(needs, installOnly(f)) {
		if why != "" {
			unmet = append(unmet, why)
		}
	}
	if len(unmet) > 0 {
		why := strings.Join(unmet, "; and ")
		record(featureResult{f.Name(), "skipped", why})
		t.Skip("skipped: " + why)
	}
	suite.Test(t, f)
	results.Lock()
	ran := results.ran[f.Name()]
	results.Unlock()
	switch {
	case t.Failed():
		record(featureResult{f.Name(), "failed", ""})
	case !ran:
		record(featureResult{f.Name(), "not selected", "filtered out by --labels, --feature or --skip-*"})
	default:
		record(featureResult{f.Name(), "passed", ""})
	}
}

func record(r featureResult) {
	results.Lock()
	defer results.Unlock()
	results.features = append(results.features, r)
}

// skip skips the running assessment with the reason, shown by go test -v
// and in the suite's summary.
func skip(t *testing.T, why string) {
	t.Helper()
	results.Lock()
	results.skips = append(results.skips, fmt.Sprintf("%s: %s", t.Name(), why))
	results.Unlock()
	t.Skip("skipped: " + why)
}

// printSummary prints the suite's summary line (mode and counts) and one
// line for each feature and each skipped assessment.
func printSummary(code int) {
	results.Lock()
	defer results.Unlock()
	count := map[string]int{}
	for _, r := range results.features {
		count[r.state]++
	}
	fmt.Printf("e2e: summary: %d features passed, %d failed, %d skipped, %d not selected; %d assessments skipped (exit %d); cluster: %s\n",
		count["passed"], count["failed"], count["skipped"], count["not selected"], len(results.skips), code, mode)
	for _, r := range results.features {
		line := fmt.Sprintf("e2e:   %-12s %s", r.state, r.name)
		if r.reason != "" {
			line += ": " + r.reason
		}
		fmt.Println(line)
	}
	for _, s := range results.skips {
		fmt.Printf("e2e:   skipped assessment %s\n", s)
	}
}

// operatorPods are the operator's running pods: those the suite's runner
// runs, or on an existing cluster the Deployment's pods that are not being
// deleted, as the API server reports them (on kwok nodes that is kwok's
// report).
type operatorPod struct {
	name     string
	ready    bool
	restarts int32
}

// listOperatorPods lists the pods of the operator's Deployment (by its
// selector, operatorPods), terminating ones included.
func listOperatorPods(ctx context.Context) ([]corev1.Pod, error) {
	sel, err := labels.Parse(operatorPods)
	if err != nil {
		return nil, err
	}
	list := &corev1.PodList{}
	err = kc.List(ctx, list, client.InNamespace(operatorNS), client.MatchingLabelsSelector{Selector: sel})
	return list.Items, err
}

func operatorPodList(ctx context.Context) ([]operatorPod, error) {
	var pods []operatorPod
	if runner != nil {
		for _, p := range runnersOperatorPods() {
			pods = append(pods, operatorPod{p.Pod, p.Ready, p.Restarts})
		}
		return pods, nil
	}
	items, err := listOperatorPods(ctx)
	if err != nil {
		return nil, err
	}
	for i := range items {
		p := &items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		op := operatorPod{name: p.Name}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				op.ready = true
			}
		}
		for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
			op.restarts += cs.RestartCount
		}
		pods = append(pods, op)
	}
	return pods, nil
}

// runningOperatorPods counts the operator's pods that still run: the
// runner's, or every pod the API server still lists (terminating ones
// included) on an existing cluster.
func runningOperatorPods(ctx context.Context) (int, error) {
	if runner != nil {
		return len(runnersOperatorPods()), nil
	}
	items, err := listOperatorPods(ctx)
	return len(items), err
}

// runnersOperatorPods are the pods the runner runs that operatorPods
// selects: it also runs others (the Helm chart's test pod, a pulled
// Guestbook's).
func runnersOperatorPods() []podrunner.PodState {
	sel, err := labels.Parse(operatorPods)
	if err != nil {
		panic(err) // a constant of the suite's
	}
	var out []podrunner.PodState
	for _, p := range runner.Pods() {
		if sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out
}

// killLeader ends the leader's manager the hard way: SIGKILL of its
// container when the suite runs the pods, else what a user has, a forced
// delete of its pod (the kubelet then stops it without waiting).
func killLeader(cfg *envconf.Config, pod string) error {
	if runner != nil {
		return runner.Kill(pod, "manager")
	}
	if mode.realNode {
		return killContainer(pod, "manager")
	}
	if out, err := kubectl(cfg, "delete", "pod", "-n", operatorNS, pod, "--grace-period=0", "--force", "--wait=false"); err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

// killMethod says how killLeader kills, for assessment names.
func killMethod() string {
	if runner != nil {
		return "SIGKILL the leader's manager container"
	}
	if mode.realNode {
		return "SIGKILL the leader's manager container through the CRI (ctr tasks kill)"
	}
	return "delete the leader's pod (kubectl delete pod --grace-period=0 --force)"
}

// restartsInvisible is "" when the operator's container restarts can be
// counted: from the suite's runner, or from the pods' status unless kwok
// writes it (pods on nodes annotated kwok.x-k8s.io/node: fake, whose
// containers kwok does not run).
func restartsInvisible(ctx context.Context) string {
	if runner != nil {
		return ""
	}
	items, err := listOperatorPods(ctx)
	if err != nil {
		return err.Error()
	}
	for i := range items {
		node := &corev1.Node{}
		if err := kc.Get(ctx, client.ObjectKey{Name: items[i].Spec.NodeName}, node); err != nil {
			continue
		}
		if node.Annotations["kwok.x-k8s.io/node"] == "fake" {
			return fmt.Sprintf("the operator's pod %s runs on kwok node %s, whose pod status (restart counts included) is kwok's, not its containers'", items[i].Name, node.Name)
		}
	}
	return ""
}

// cleanUp deletes what a feature made (kubectl delete ARGS). On the suite's
// cluster it does not wait: the cluster goes at the end. On an existing
// cluster it waits, so that the suite leaves the cluster as it found it and
// a second run does not meet a terminating namespace.
func cleanUp(t *testing.T, cfg *envconf.Config, args ...string) {
	t.Helper()
	wait := "--wait=false"
	if !mode.created() {
		wait = "--timeout=5m"
	}
	if out, err := kubectl(cfg, append(append([]string{"delete", "--ignore-not-found"}, args...), wait)...); err != nil {
		t.Logf("cleaning up (kubectl delete %s): %v: %s", strings.Join(args, " "), err, out)
	}
}

// servicePath is how the suite's kwok cluster reaches Services.
func servicePath() kwokconfig.ServicePath { return mode.servicePath }

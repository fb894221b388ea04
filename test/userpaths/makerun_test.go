package userpaths_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/example/myoperator/test/framework/docblocks"
	"github.com/example/myoperator/test/framework/manifests"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/framework/testutil"
)

// enableEnv turns TestMakeRun on; make test-make-run sets it. The test starts
// a kwok cluster and runs make itself, which would regenerate manifests under
// the feet of the other packages if `go test ./...` ran it among them.
const enableEnv = "MYOPERATOR_TEST_MAKE_RUN"

// layouts are the data keys of a Drink's ConfigMap for each version its spec
// can be authored in (docs/DESIGN.md), written out here
// rather than taken from the reconciler that the test checks.
var layouts = map[string][]string{
	"v1alpha1": {"name", "drink"},
	"v1beta1":  {"name", "drink", "size", "sugar"},
	"v1":       {"displayName", "beverage", "size", "sugarCubes", "extras"},
}

// TestMakeRun: on a kwok cluster whose API server runs on loopback beside
// the test, the course's `make install`, `make run`
// in the background (refused first while the operator's Deployment
// exists), `kubectl apply -k config/samples/` and the course's own Drink
// leave the four samples (a Drink through each version, the Guestbook), the
// course's Drink and the OperatorConfig that make run's bootstrap created
// kstatus Current, and each Drink's ConfigMap holds exactly its layout.
func TestMain(m *testing.M) {
	// The clients' logs (controller-runtime's) are not the test's output.
	log.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

func TestMakeRun(t *testing.T) {
	u := setUp(t)
	root, dir, kubeconfig, env := u.root, u.dir, u.kubeconfig, u.env

	// The cluster: a user's would do; this one is the project's dev cluster
	// under a name of its own.
	cluster := fmt.Sprintf("myoperator-makerun-%d", os.Getpid())
	start := time.Now()
	t.Cleanup(func() { _, _ = command(root, env, "hack/dev-cluster.sh", "down", cluster, kubeconfig) })
	if out, err := command(root, env, "hack/dev-cluster.sh", "up", cluster, kubeconfig); err != nil {
		t.Fatalf("hack/dev-cluster.sh up: %v\n%s", err, out)
	}
	t.Logf("kwok cluster %s up in %s", cluster, time.Since(start).Round(100*time.Millisecond))

	theCourse(t, root, env, kubeconfig, dir, nil)
}

// theCourse runs the course's order on the cluster of kubeconfig, the
// commands read from the README's block marked course: make install, make
// run (refused first while the operator's Deployment exists;
// beforeRun, when set, runs just before it with make's variables), kubectl
// apply -k config/samples/ and the course's own Drink; then the four samples
// (a Drink through each version, the Guestbook), the course's Drink and the
// OperatorConfig that make run's bootstrap created are kstatus Current, each
// Drink's ConfigMap holds exactly its layout, and every Drink reads through
// every version.
func theCourse(t *testing.T, root string, env []string, kubeconfig, dir string, beforeRun func(vars []string)) {
	t.Helper()
	vars, _, probePort := runPorts(t)

	// The course's order, as the README gives it (its block marked
	// course): make install, make run, kubectl apply -k config/samples/.
	// The ports go in the environment, which make's ?= variables take.
	env = append(slices.Clone(env), vars...)
	block, err := docblocks.Get(root, "README.md::course")
	if err != nil {
		t.Fatal(err)
	}
	var stopRun *makeRun
	for _, cmd := range block.Commands() {
		start := time.Now()
		if cmd == "make run" {
			checkRefusedWhileDeployed(t, root, env, vars)
			if beforeRun != nil {
				beforeRun(vars)
			}
			stopRun = startMakeRun(t, root, env, filepath.Join(dir, "make-run.log"), vars)
			waitReady(t, stopRun, probePort, 5*time.Minute)
			t.Logf("make run: /readyz 200 after %s (includes go run's build)", time.Since(start).Round(100*time.Millisecond))
			continue
		}
		out, err := command(root, env, "sh", "-c", cmd)
		if err != nil {
			msg := fmt.Sprintf("%s (%s:%d): %v\n%s", cmd, block.File, block.Line, err, out)
			if stopRun != nil {
				stopRun.fail(t, "%s", msg)
			}
			t.Fatal(msg)
		}
		t.Logf("%s: %s", cmd, time.Since(start).Round(100*time.Millisecond))
	}
	if stopRun == nil {
		t.Fatalf("%s:%d runs no make run", block.File, block.Line)
	}
	start := time.Now()
	// The course's own Drink, as the course gives it.
	courseDrink := testenv.CourseDrink(t)
	apply := exec.Command("kubectl", "apply", "-f", "-")
	apply.Dir, apply.Env, apply.Stdin = root, env, strings.NewReader(courseDrink)
	if out, err := apply.CombinedOutput(); err != nil {
		stopRun.fail(t, "kubectl apply of the course's Drink: %v\n%s", err, out)
	}
	course := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(courseDrink), &course.Object); err != nil {
		t.Fatal(err)
	}
	course.SetNamespace("default")
	// make run's bootstrap created it, as the initContainer does.
	operatorConfig := &unstructured.Unstructured{}
	operatorConfig.SetAPIVersion("operator.example.com/v1alpha1")
	operatorConfig.SetKind("OperatorConfig")
	operatorConfig.SetName("cluster")

	ctx := context.Background()
	c := newClient(t, kubeconfig)
	samples := loadSamples(t)
	if len(samples) != 4 {
		t.Fatalf("config/samples renders %d objects, want 4 (a Drink through each version, a Guestbook)", len(samples))
	}
	testenv.Eventually(t, 2*time.Minute, func() string {
		if stopRun.exited() {
			return "make run exited:\n" + stopRun.tail()
		}
		for _, s := range append(samples, course, operatorConfig) {
			if why := notCurrent(ctx, c, s); why != "" {
				return why
			}
		}
		return ""
	})
	t.Logf("all %d samples, the course's Drink and the OperatorConfig kstatus Current %s after kubectl apply", len(samples), time.Since(start).Round(100*time.Millisecond))

	for _, s := range samples {
		if s.GetKind() != "Drink" {
			continue
		}
		checkLayout(ctx, t, c, s)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(course), cm); err != nil {
		t.Fatalf("the course's Drink's ConfigMap: %v", err)
	}
	if want := map[string]string{"drink": "coffee", "name": "my-drink"}; !maps.Equal(cm.Data, want) {
		t.Errorf("the course's Drink's ConfigMap holds %v, want exactly the course's %v", cm.Data, want)
	}
	checkReadable(ctx, t, c, append(samples, course))
}

// userPath is what a test of the course's path starts from: the repository,
// the Kubernetes binaries, a folder of its own, the user's kubeconfig there
// and an environment naming it.
type userPath struct {
	root, binDir, dir, kubeconfig string
	env                           []string
}

// setUp skips the test unless make test-make-run asked for it (enableEnv).
func setUp(t *testing.T) userPath {
	t.Helper()
	if os.Getenv(enableEnv) == "" {
		t.Skipf("set %s=1 inside the network namespace, or run make test-make-run", enableEnv)
	}
	root, err := testutil.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	binDir, err := testenv.BinaryDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	return userPath{root: root, binDir: binDir, dir: dir, kubeconfig: kubeconfig, env: userEnv(kubeconfig, binDir)}
}

// runPorts are make run's ports, as make variables: its own, in case
// another test in this network namespace holds the defaults (9443, 8081),
// or a manager that got SIGTERM still answers on its ports for a moment.
// A port closed by FreePort may be offered again: never the same two.
func runPorts(t *testing.T) (vars []string, webhookPort, probePort int) {
	t.Helper()
	webhookPort, probePort = testutil.FreePort(t), testutil.FreePort(t)
	for probePort == webhookPort {
		probePort = testutil.FreePort(t)
	}
	return []string{fmt.Sprintf("RUN_WEBHOOK_PORT=%d", webhookPort), fmt.Sprintf("RUN_PROBE_ADDR=127.0.0.1:%d", probePort)}, webhookPort, probePort
}

// checkReadable: every Drink among objs is read through each served
// version, which for all but the stored one is a call of the conversion
// webhook from the API server to make run's manager.
func checkReadable(ctx context.Context, t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, v := range []string{"v1alpha1", "v1beta1", "v1"} {
		for _, o := range objs {
			if o.GetKind() != "Drink" {
				continue
			}
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("example.com/" + v)
			u.SetKind("Drink")
			if err := c.Get(ctx, client.ObjectKeyFromObject(o), u); err != nil {
				t.Errorf("Drink %s read through %s: %v", o.GetName(), v, err)
			}
		}
	}
}

// checkRefusedWhileDeployed: with the operator's Deployment in the cluster
// (an object of that name is enough: make run looks for it), make run
// exits non-zero naming make undeploy, and leaves the Drink conversion
// calling the in-cluster Service; with it gone, make run goes on.
func checkRefusedWhileDeployed(t *testing.T, root string, env, vars []string) {
	t.Helper()
	const deployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: myoperator-controller-manager, namespace: myoperator-system}
spec:
  replicas: 0
  selector: {matchLabels: {app: decoy}}
  template:
    metadata: {labels: {app: decoy}}
    spec: {containers: [{name: c, image: decoy}]}
`
	apply := exec.Command("kubectl", "apply", "-f", "-")
	apply.Dir, apply.Env, apply.Stdin = root, env, strings.NewReader("apiVersion: v1\nkind: Namespace\nmetadata: {name: myoperator-system}\n---\n"+deployment)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply of a Deployment named as the operator's: %v\n%s", err, out)
	}
	out, err := command(root, env, "make", append([]string{"--no-print-directory", "run"}, vars...)...)
	if err == nil || !strings.Contains(string(out), "the operator is deployed in this cluster") || !strings.Contains(string(out), "\n  make undeploy\n") {
		t.Fatalf("make run with the operator deployed: %v, want a refusal naming make undeploy:\n%s", err, out)
	}
	svc, err := command(root, env, "kubectl", "get", "crd", "drinks.example.com", "-o", "jsonpath={.spec.conversion.webhook.clientConfig.service.name}")
	if err != nil || string(svc) != "myoperator-webhook-service" {
		t.Fatalf("the Drink conversion after the refused make run: %q (%v), want the in-cluster Service myoperator-webhook-service", svc, err)
	}
	t.Logf("make run refused while the operator is deployed:\n%s", out)
	if out, err := command(root, env, "kubectl", "delete", "deployment", "-n", "myoperator-system", "myoperator-controller-manager"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// userEnv is this process's environment as a user's shell would have it
// for a cluster whose kubeconfig is given: KUBECONFIG set, no make state
// inherited from a make that started this test.
func userEnv(kubeconfig, binDir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "KUBECONFIG", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", enableEnv:
			continue
		}
		env = append(env, kv)
	}
	return append(env, "KUBECONFIG="+kubeconfig, "K8S_BIN="+binDir)
}

func command(dir string, env []string, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	return cmd.CombinedOutput()
}

// makeRun is `make run` running in the background in a process group of its
// own (make, go run and the manager), with its output in a file.
type makeRun struct {
	log     string
	pid     int
	done    chan struct{}
	stopped sync.Once
}

func (r *makeRun) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// tail returns the last lines of make run's output.
func (r *makeRun) tail() string {
	data, _ := os.ReadFile(r.log)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-40):], "\n")
}

func (r *makeRun) fail(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Fatalf(format+"\nmake run's last lines:\n%s", append(args, r.tail())...)
}

// startMakeRun starts `make run` and stops it when the test ends: SIGTERM to
// the whole group (the manager shuts down gracefully), SIGKILL after 45 s.
func startMakeRun(t *testing.T, root string, env []string, log string, vars []string) *makeRun {
	t.Helper()
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", append([]string{"--no-print-directory", "run"}, vars...)...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = root, env, f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("make run: %v", err)
	}
	r := &makeRun{log: log, pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = f.Close(); close(r.done) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop ends make run, once: SIGTERM to the whole group, SIGKILL after 45 s.
func (r *makeRun) stop(t *testing.T) {
	r.stopped.Do(func() {
		_ = syscall.Kill(-r.pid, syscall.SIGTERM)
		select {
		case <-r.done:
		case <-time.After(45 * time.Second):
			t.Errorf("make run still running 45 s after SIGTERM; killing it")
			_ = syscall.Kill(-r.pid, syscall.SIGKILL)
			<-r.done
		}
		if t.Failed() {
			t.Logf("make run's last lines:\n%s", r.tail())
		}
	})
}

// waitReady waits until the manager's /readyz answers 200: certificates
// written, injected into the CRD and webhook configurations, and served.
func waitReady(t *testing.T, r *makeRun, probePort int, timeout time.Duration) {
	t.Helper()
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort)
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(url) //nolint:gosec,noctx // a loopback URL the test built
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if r.exited() {
			r.fail(t, "make run exited before %s answered 200", url)
		}
		if time.Now().After(deadline) {
			r.fail(t, "%s not 200 after %s (last: %v)", url, timeout, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func newClient(t *testing.T, kubeconfig string) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// loadSamples renders config/samples as kubectl apply -k does; a namespaced
// object without a namespace lands in the kubeconfig's, "default".
func loadSamples(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	docs, err := manifests.Kustomize("config/samples")
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, doc := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatal(err)
		}
		if u.GetKind() == "Drink" && u.GetNamespace() == "" {
			u.SetNamespace("default")
		}
		objs = append(objs, u)
	}
	return objs
}

// notCurrent reads the object in the version of its sample and says why
// kstatus does not compute Current, or "" when it does.
func notCurrent(ctx context.Context, c client.Client, sample *unstructured.Unstructured) string {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(sample.GroupVersionKind())
	id := fmt.Sprintf("%s %s", sample.GetAPIVersion()+"/"+sample.GetKind(), client.ObjectKeyFromObject(sample))
	if err := c.Get(ctx, client.ObjectKeyFromObject(sample), u); err != nil {
		return fmt.Sprintf("%s: %v", id, err)
	}
	res, err := status.Compute(u)
	if err != nil {
		return fmt.Sprintf("%s: kstatus: %v", id, err)
	}
	if res.Status != status.CurrentStatus {
		return fmt.Sprintf("%s: kstatus %s: %s", id, res.Status, res.Message)
	}
	// kstatus reads only Reconciling, Stalled and observedGeneration of a
	// custom resource; Ready (Available for the OperatorConfig) must be
	// True as well.
	ready := "Ready"
	if sample.GetKind() == "OperatorConfig" {
		ready = "Available"
	}
	if got := conditionStatus(u, ready); got != "True" {
		return fmt.Sprintf("%s: kstatus Current but condition %s is %q", id, ready, got)
	}
	return ""
}

// conditionStatus returns the status of the object's condition of that type,
// "" when it has none.
func conditionStatus(u *unstructured.Unstructured, condType string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == condType {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

// checkLayout: the Drink's ConfigMap, controlled by the Drink, holds exactly
// the keys of the version the sample is written in, with the sample's values
// (extras sorted and comma-separated).
func checkLayout(ctx context.Context, t *testing.T, c client.Client, sample *unstructured.Unstructured) {
	t.Helper()
	version := sample.GroupVersionKind().Version
	drink := &unstructured.Unstructured{}
	drink.SetGroupVersionKind(sample.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(sample), drink); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(sample), cm); err != nil {
		t.Errorf("Drink %s (%s): its ConfigMap: %v", sample.GetName(), version, err)
		return
	}
	if owner := metav1Controller(cm); owner != string(drink.GetUID()) {
		t.Errorf("ConfigMap %s: controller owner UID %q, want the Drink's %q", cm.Name, owner, drink.GetUID())
	}
	spec, _, _ := unstructured.NestedMap(sample.Object, "spec")
	want := map[string]string{}
	for _, key := range layouts[version] {
		v, ok := spec[key]
		if !ok {
			t.Fatalf("sample %s has no spec.%s; the test needs every key of its layout", sample.GetName(), key)
		}
		want[key] = render(v)
	}
	if len(want) == 0 {
		t.Fatalf("no layout known for version %q", version)
	}
	if !maps.Equal(cm.Data, want) {
		t.Errorf("ConfigMap %s (Drink written in %s):\n got %v\nwant %v", cm.Name, version, cm.Data, want)
	} else {
		t.Logf("ConfigMap %s (%s layout): %v", cm.Name, version, cm.Data)
	}
}

func metav1Controller(cm *corev1.ConfigMap) string {
	for _, ref := range cm.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			return string(ref.UID)
		}
	}
	return ""
}

// render writes a spec value as the ConfigMap holds it.
func render(v any) string {
	if list, ok := v.([]any); ok {
		items := make([]string, 0, len(list))
		for _, item := range list {
			items = append(items, fmt.Sprint(item))
		}
		slices.Sort(items)
		return strings.Join(items, ",")
	}
	return fmt.Sprint(v)
}

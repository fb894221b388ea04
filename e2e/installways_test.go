//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/yaml"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/test/framework/docblocks"
	"github.com/example/myoperator/test/framework/testenv"
)

// The ways a user installs a release (E2E_INSTALL), on the cluster the
// suite creates:
//   - kustomize (the default): kubectl apply -k config/default, with the
//     image the suite builds from the tree;
//   - manifest: kubectl apply -f install.yaml from make dist, its images
//     pushed to a registry on loopback and pulled from it by digest;
//   - helm: helm install of make dist's chart, pushed the same way.
//
// The last two take the release's files from dist/ (make
// test-e2e-install-ways runs make dist first) and run the install
// features only (area=install, area=helm); make ci runs each once.
const (
	installKustomize = "kustomize"
	installManifest  = "manifest"
	installHelm      = "helm"
	// helmRelease is the release name the suite installs the chart as, and
	// helmNamespace where Helm keeps its record of it: a namespace that
	// exists before the install, since the chart creates
	// myoperator-system itself, with its Pod Security labels
	// (docs/install.md).
	helmRelease   = "myoperator"
	helmNamespace = "default"
)

// release is the copy of dist/ the suite pushed to its registry.
var release struct {
	dir      string // the copy, its manifests pointing at the registry
	registry string // host:port on loopback
	stop     func()
}

// installDescription says how the suite installs, for the logs.
func installDescription() string {
	switch mode.install {
	case installManifest:
		return "kubectl apply -f install.yaml of make dist, images pulled by digest from a loopback registry"
	case installHelm:
		return "helm install of make dist's chart, images pulled by digest from a loopback registry"
	}
	return "kubectl apply -k " + installedConfig() + ", the production manifests"
}

// installOnly is the reason the features other than the install ones are
// skipped when the suite installs from the release's files.
func installOnly(f features.Feature) string {
	if mode.install == installKustomize {
		return ""
	}
	for _, a := range f.Labels()["area"] {
		if a == "install" || a == "helm" {
			return ""
		}
	}
	return "E2E_INSTALL=" + mode.install + " runs the install features only (area=install, area=helm); the others run with kustomize"
}

// publishRelease copies dist/ (so that dist/ itself stays as make dist
// wrote it), serves a registry on loopback and pushes the release's images
// to it with the project's push (bin/registry push, what make
// release-push runs), which points the copy's manifests, chart and bundle
// at it.
func publishRelease(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	dist := filepath.Join(root, "dist")
	if _, err := os.Stat(filepath.Join(dist, "install.yaml")); err != nil {
		return ctx, fmt.Errorf("dist/install.yaml: %w (E2E_INSTALL=%s installs make dist's files: make test-e2e-install-ways runs make dist first)", err, mode.install)
	}
	release.dir = filepath.Join(root, "bin", "e2e-dist")
	if err := os.RemoveAll(release.dir); err != nil {
		return ctx, err
	}
	if out, err := exec.Command("cp", "-r", dist, release.dir).CombinedOutput(); err != nil {
		return ctx, fmt.Errorf("copying dist/: %w: %s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return ctx, err
	}
	release.registry = l.Addr().String()
	_ = l.Close()
	bin := filepath.Join(root, "bin", "registry")
	logFile, err := os.Create(filepath.Join(root, "bin", "e2e-registry.log"))
	if err != nil {
		return ctx, err
	}
	srv := exec.Command(bin, "serve", "-addr", release.registry)
	srv.Stdout, srv.Stderr = logFile, logFile
	if err := srv.Start(); err != nil {
		return ctx, fmt.Errorf("%s serve (make test-e2e builds it): %w", bin, err)
	}
	release.stop = func() { _ = srv.Process.Kill(); _ = srv.Wait(); _ = logFile.Close() }
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + release.registry + "/v2/")
		if err == nil {
			_ = resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			return ctx, fmt.Errorf("the registry on %s does not answer: %w", release.registry, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, err := exec.Command(bin, "push", "-to", release.registry+"/release", "-insecure", "-from", "ghcr.io/example", release.dir).CombinedOutput()
	if err != nil {
		return ctx, fmt.Errorf("registry push: %w: %s", err, out)
	}
	fmt.Printf("e2e: %s", indent(string(out)))
	return ctx, nil
}

func stopRegistry(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	if release.stop != nil {
		release.stop()
	}
	return ctx, nil
}

// assessPulledFromRegistry: the operator's pods pulled their image from the
// loopback registry by the digest install.yaml names (the registry's log).
func assessPulledFromRegistry(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
	if mode.install == installKustomize {
		skip(t, "the kustomize install runs the image the suite built; E2E_INSTALL=manifest and helm pull the release's")
	}
	dep := &appsv1.Deployment{}
	if err := kc.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: operatorDeployment}, dep); err != nil {
		t.Fatal(err)
	}
	image := dep.Spec.Template.Spec.Containers[0].Image
	repo, digest, ok := strings.Cut(image, "@")
	if !ok || !strings.HasPrefix(repo, release.registry+"/") {
		t.Fatalf("the Deployment's image %s is not in the loopback registry %s by digest", image, release.registry)
	}
	if !registryServed(t, strings.TrimPrefix(repo, release.registry+"/"), digest) {
		t.Errorf("the registry's log has no GET of %s: the image was not pulled from it", image)
	}
	return ctx
}

// releaseChart is the chart archive of the release copy.
func releaseChart() (string, error) {
	charts, err := filepath.Glob(filepath.Join(release.dir, "myoperator-*.tgz"))
	if err != nil {
		return "", err
	}
	if len(charts) != 1 {
		return "", fmt.Errorf("dist/ holds %d charts %v, want one", len(charts), charts)
	}
	return charts[0], nil
}

// helm runs the helm binary make test-e2e builds (HELM) against the
// suite's cluster, its own folders kept under bin/.
func helm(cfg *envconf.Config, args ...string) (string, error) {
	bin := os.Getenv("HELM")
	if bin == "" {
		return "", fmt.Errorf("HELM is not set: make test-e2e sets it to the helm it builds")
	}
	cmd := exec.Command(bin, append([]string{"--kubeconfig", cfg.KubeconfigFile()}, args...)...)
	home := filepath.Join(root, "bin", ".helm")
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// installRelease installs the release's files the way mode.install says.
func installRelease(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	switch mode.install {
	case installManifest:
		return kubectlStep("apply", "--server-side", "-f", filepath.Join(release.dir, "install.yaml"))(ctx, cfg)
	case installHelm:
		chart, err := releaseChart()
		if err != nil {
			return ctx, err
		}
		if out, err := helm(cfg, "install", helmRelease, chart, "--namespace", helmNamespace); err != nil {
			return ctx, fmt.Errorf("helm install: %w: %s", err, out)
		}
	}
	return ctx, nil
}

// assessSamplesReady applies config/samples (which holds no
// OperatorConfig: the bootstrap's one stays as it is) and waits until each
// Drink and the Guestbook are Ready; then removes them.
func assessSamplesReady(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
	files, err := filepath.Glob(filepath.Join(root, "config", "samples", "*_*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var applied []string
	for _, f := range files {
		if out, err := kubectl(cfg, "apply", "-n", "default", "-f", f); err != nil {
			t.Fatalf("kubectl apply -f %s: %v: %s", f, err, out)
		}
		applied = append(applied, f)
	}
	defer func() {
		for _, f := range applied {
			cleanUp(t, cfg, "-n", "default", "--ignore-not-found", "--timeout=2m", "-f", f)
		}
	}()
	for _, d := range []string{"drink-sample-v1alpha1", "drink-sample-v1beta1", "drink-sample-v1"} {
		conditionTrueWithin("drinks.example.com", "default", d, "Ready", 90*time.Second)(ctx, t, cfg)
	}
	conditionTrueWithin("guestbooks.webapp.my.domain", "", "guestbook-sample", "Ready", 3*time.Minute)(ctx, t, cfg)
	// The README's commands for looking at them, as written (its block
	// marked inspect), the plugin's among them; drink.yaml is a sample.
	dir := t.TempDir()
	sample, err := os.ReadFile(filepath.Join(root, "config", "samples", "example_v1alpha1_drink.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "drink.yaml"), sample, 0o600); err != nil {
		t.Fatal(err)
	}
	out := runDocBlock(t, cfg, "README.md::inspect", dir)
	for _, want := range []string{"drink.example.com/drink-sample-v1 annotated", "apiVersion: example.com/v1\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the README's commands printed no %q:\n%s", want, out)
		}
	}
	if mode.realNode && mode.install != installKustomize {
		// The kubelet ran the Guestbook's pods from the image the manager's
		// GUESTBOOK_IMAGE names, pulled by containerd from the loopback registry.
		oc := &operatorv1alpha1.OperatorConfig{}
		if err := kc.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, oc); err != nil {
			t.Fatal(err)
		}
		image := ""
		if oc.Status.Effective != nil {
			image = oc.Status.Effective.GuestbookImage
		}
		repo, digest, _ := strings.Cut(image, "@")
		if name, ok := strings.CutPrefix(repo, release.registry+"/"); !ok || digest == "" || !registryServed(t, name, digest) {
			t.Errorf("the Guestbook image %q in effect was not pulled from the loopback registry by digest", image)
		}
	}
	return ctx
}

// registryServed says whether the loopback registry's log has a GET of
// the manifest name@digest (the repository's name without the registry,
// and its tag if any).
func registryServed(t *testing.T, name, digest string) bool {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(root, "bin", "e2e-registry.log"))
	if err != nil {
		t.Fatal(err)
	}
	name, _, _ = strings.Cut(name, ":")
	n := strings.Count(string(log), "GET /v2/"+name+"/manifests/"+digest)
	fmt.Printf("e2e: the registry served %s@%s %d times\n", name, digest, n)
	return n > 0
}

// helmLifecycle: with the chart installed (E2E_INSTALL=helm), helm test
// passes, and fails with the webhook unreachable; helm upgrade with a
// changed value rolls the manager out and keeps the Drinks; helm
// uninstall removes the operator but keeps the CRDs, the Drinks and the
// operand namespace; helm install with a value outside the chart's schema
// is refused and installs nothing; helm install again adopts what was
// kept and the operator reconciles the Drinks again.
func helmLifecycle() features.Feature {
	key := client.ObjectKey{Namespace: "default", Name: "e2e-helm-drink"}
	return features.New("helm upgrade, uninstall and install again").WithLabel("area", "helm").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			d := &drinksv1.Drink{}
			d.Name, d.Namespace = key.Name, key.Namespace
			d.Spec.DisplayName, d.Spec.Beverage, d.Spec.Size = "Helm", "tea", "Small"
			if err := kc.Create(ctx, d); err != nil {
				t.Fatal(err)
			}
			conditionTrueWithin("drinks.example.com", key.Namespace, key.Name, "Ready", 90*time.Second)(ctx, t, cfg)
			return ctx
		}).
		Assess("helm test passes, fails with the webhook unreachable, and passes again", assessHelmTest).
		Assess("helm upgrade with a pod annotation rolls the manager out", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			chart, err := releaseChart()
			if err != nil {
				t.Fatal(err)
			}
			if out, err := helm(cfg, "upgrade", helmRelease, chart, "--namespace", helmNamespace, "--reuse-values", "--set", "podAnnotations.e2e/upgraded=yes"); err != nil {
				t.Fatalf("helm upgrade: %v: %s", err, out)
			}
			dep := &appsv1.Deployment{}
			if err := kc.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: operatorDeployment}, dep); err != nil {
				t.Fatal(err)
			}
			if dep.Spec.Template.Annotations["e2e/upgraded"] != "yes" {
				t.Errorf("pod template annotations after helm upgrade: %v", dep.Spec.Template.Annotations)
			}
			if out, err := kubectl(cfg, "rollout", "status", "-n", operatorNS, "deployment/"+operatorDeployment, "--timeout=3m"); err != nil {
				t.Fatalf("kubectl rollout status: %v: %s", err, out)
			}
			if err := waitOperatorReady(ctx, 3*time.Minute); err != nil {
				t.Fatal(err)
			}
			out, err := helm(cfg, "history", helmRelease, "--namespace", helmNamespace)
			if err != nil || !strings.Contains(strings.ToLower(out), "upgrade complete") {
				t.Errorf("helm history: %v\n%s", err, out)
			}
			conditionTrueWithin("drinks.example.com", key.Namespace, key.Name, "Ready", 90*time.Second)(ctx, t, cfg)
			return ctx
		}).
		Assess("helm uninstall keeps the CRDs, the Drinks and the operand namespace", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if out, err := helm(cfg, "uninstall", helmRelease, "--namespace", helmNamespace, "--wait", "--timeout", "3m"); err != nil {
				t.Fatalf("helm uninstall: %v: %s", err, out)
			}
			if err := kc.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: operatorDeployment}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
				t.Errorf("the manager's Deployment after helm uninstall: %v, want it gone", err)
			}
			for _, crd := range operatorCRDs {
				if out, err := kubectl(cfg, "get", "crd", crd, "-o", "name"); err != nil {
					t.Errorf("CRD %s after helm uninstall: %v: %s", crd, err, out)
				}
			}
			if err := kc.Get(ctx, key, &drinksv1.Drink{}); err != nil {
				t.Errorf("Drink %s after helm uninstall: %v", key, err)
			}
			if err := kc.Get(ctx, client.ObjectKey{Name: "guestbook"}, &corev1.Namespace{}); err != nil {
				t.Errorf("operand namespace after helm uninstall: %v", err)
			}
			return ctx
		}).
		Assess("helm install refuses a value outside the chart's schema, naming it, and installs nothing", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			chart, err := releaseChart()
			if err != nil {
				t.Fatal(err)
			}
			// "selfsigned" is a typo a user makes; without the schema any
			// mode but cert-manager meant the operator's own certificates.
			out, err := helm(cfg, "install", helmRelease, chart, "--namespace", helmNamespace, "--set", "certificates.mode=selfsigned")
			const want = "at '/certificates/mode': value must be one of 'self', 'cert-manager'"
			if err == nil || !strings.Contains(out, want) {
				t.Fatalf("helm install --set certificates.mode=selfsigned: %v, want it refused with %q:\n%s", err, want, out)
			}
			t.Logf("helm install --set certificates.mode=selfsigned refused: %s", strings.TrimSpace(out))
			if status, err := helm(cfg, "status", helmRelease, "--namespace", helmNamespace); err == nil || !strings.Contains(status, "not found") {
				t.Errorf("helm status after the refused install: %v: %s, want no release", err, status)
			}
			if err := kc.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: operatorDeployment}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
				t.Errorf("the manager's Deployment after the refused install: %v, want none", err)
			}
			return ctx
		}).
		Assess("helm install again adopts what was kept; the Drinks reconcile", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if _, err := installRelease(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			if err := waitOperatorReady(ctx, 3*time.Minute); err != nil {
				t.Fatal(err)
			}
			// A change the new operator must act on: the Drink's size.
			d := &drinksv1.Drink{}
			if err := kc.Get(ctx, key, d); err != nil {
				t.Fatal(err)
			}
			d.Spec.Size = "Large"
			if err := kc.Update(ctx, d); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, 90*time.Second, func() string {
				got := &drinksv1.Drink{}
				if err := kc.Get(ctx, key, got); err != nil {
					return err.Error()
				}
				if got.Status.ObservedGeneration != got.Generation {
					return fmt.Sprintf("status.observedGeneration %d, generation %d", got.Status.ObservedGeneration, got.Generation)
				}
				return ""
			})
			conditionTrueWithin("drinks.example.com", key.Namespace, key.Name, "Ready", 30*time.Second)(ctx, t, cfg)
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cleanUp(t, cfg, "drinks.example.com", key.Name, "-n", key.Namespace, "--ignore-not-found")
			return ctx
		}).
		Feature()
}

// helmTestPod selects the chart's test pod (config/helm-test), which the
// pod runner runs to its end.
const helmTestPod = "app.kubernetes.io/component=helm-test"

// assessHelmTest: helm test runs kubectl myoperator doctor from the
// manager's image as its read-only ServiceAccount (config/helm-test). On
// the working install it passes; with the manager scaled to zero, so that
// the webhook Service has no ready endpoint and the API server nowhere to
// send a call, it fails naming that; with the manager back it passes.
func assessHelmTest(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
	// The pod's output is the pod runner's log of its container (kwok's
	// nodes serve no logs, so helm test --logs cannot fetch it here).
	logFile := runner.LogFile("myoperator-helm-test", "doctor")
	test := func() (string, error) {
		out, err := helm(cfg, "test", helmRelease, "--namespace", helmNamespace, "--timeout", "3m")
		log, _ := os.ReadFile(logFile)
		if i := strings.LastIndex(string(log), "=== pod runner:"); i >= 0 {
			// This run's part: from its start line on.
			if j := strings.LastIndex(string(log[:i]), "=== pod runner:"); j >= 0 {
				log = log[j:]
			}
		}
		return out + "\n--- the test pod's output (" + logFile + "):\n" + string(log), err
	}
	out, err := test()
	if err != nil {
		t.Fatalf("helm test on the working install: %v\n%s", err, out)
	}
	t.Logf("helm test on the working install:\n%s", out)
	dep := &appsv1.Deployment{}
	if err := kc.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: operatorDeployment}, dep); err != nil {
		t.Fatal(err)
	}
	replicas := fmt.Sprint(*dep.Spec.Replicas)
	restore := func() {
		if out, err := kubectl(cfg, "scale", "-n", operatorNS, "deployment/"+operatorDeployment, "--replicas="+replicas); err != nil {
			t.Fatalf("kubectl scale --replicas=%s: %v: %s", replicas, err, out)
		}
		if err := waitOperatorReady(ctx, 3*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := kubectl(cfg, "scale", "-n", operatorNS, "deployment/"+operatorDeployment, "--replicas=0"); err != nil {
		t.Fatalf("kubectl scale --replicas=0: %v: %s", err, out)
	}
	testenv.Eventually(t, 3*time.Minute, func() string {
		pods := &corev1.PodList{}
		if err := kc.List(ctx, pods, client.InNamespace(operatorNS), client.MatchingLabels{"control-plane": "controller-manager"}); err != nil {
			return err.Error()
		}
		if len(pods.Items) > 0 {
			return fmt.Sprintf("%d manager pods after scaling to 0", len(pods.Items))
		}
		return ""
	})
	out, err = test()
	if err == nil || !strings.Contains(out, "service/"+operatorNS+"/myoperator-webhook-service has no ready endpoint") {
		restore()
		t.Fatalf("helm test with the webhook unreachable: %v, want a failure naming the webhook Service's endpoints:\n%s", err, out)
	}
	t.Logf("helm test with the manager scaled to 0 (%v):\n%s", err, out)
	restore()
	if out, err := test(); err != nil {
		t.Fatalf("helm test with the manager back: %v\n%s", err, out)
	}
	pods := &corev1.PodList{}
	if err := kc.List(ctx, pods, client.InNamespace(operatorNS), client.MatchingLabels{"app.kubernetes.io/component": "helm-test"}); err != nil || len(pods.Items) != 0 {
		t.Errorf("test pods left after a passing helm test: %d (%v), want none (hook-succeeded)", len(pods.Items), err)
	}
	return ctx
}

// previousChart is the chart hack/helmchart makes from the previous
// release's tree (its config/), as a chart of that release would have
// been, its default image the release's image under the suite's name for it
// (its values render the suite's overlay of the release, previousRelease.config).
func previousChart(p previousRelease) (string, error) {
	chart := filepath.Join(root, "bin", "releases", "charts", p.version, "myoperator")
	out, err := exec.Command(filepath.Join(root, "bin", "helmchart"), "-config", filepath.Join(p.dir, "config"), "-base", p.config(), "-out", chart, "-version", p.version).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("bin/helmchart on %s's tree (make test-e2e builds it): %w: %s", p.version, err, out)
	}
	return chart, nil
}

// documentedHelmUpgrade is docs/install.md's helm upgrade to a new release
// (its block marked helm-upgrade), with chart for the chart it names, as
// arguments of helm.
func documentedHelmUpgrade(chart string) ([]string, error) {
	b, err := docblocks.Get(root, "docs/install.md::helm-upgrade")
	if err != nil {
		return nil, err
	}
	cmds := b.Commands()
	if len(cmds) != 1 {
		return nil, fmt.Errorf("%s:%d holds %d commands, want the one helm upgrade", b.File, b.Line, len(cmds))
	}
	args := strings.Fields(cmds[0])
	if len(args) < 4 || args[0] != "helm" || args[1] != "upgrade" || args[2] != helmRelease || !strings.HasSuffix(args[3], ".tgz") {
		return nil, fmt.Errorf("%s:%d: %q is not helm upgrade %s <chart>.tgz and flags", b.File, b.Line, cmds[0], helmRelease)
	}
	args[3] = chart
	return args[1:], nil
}

// checkManagerImage: the operator's Deployment runs the manager and the
// bootstrap from the image the release's chart names by default (by
// digest), not an earlier release's.
func checkManagerImage(ctx context.Context, t *testing.T, cfg *envconf.Config, what string) {
	t.Helper()
	chart, err := releaseChart()
	if err != nil {
		t.Fatal(err)
	}
	out, err := helm(cfg, "show", "values", chart)
	if err != nil {
		t.Fatalf("helm show values %s: %v: %s", chart, err, out)
	}
	var values struct {
		Image struct{ Repository, Digest string } `json:"image"`
	}
	if err := yaml.Unmarshal([]byte(out), &values); err != nil || values.Image.Digest == "" {
		t.Fatalf("%s's values name no image by digest (%v):\n%s", chart, err, out)
	}
	want := values.Image.Repository + "@" + values.Image.Digest
	d := &appsv1.Deployment{}
	if err := kc.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: operatorDeployment}, d); err != nil {
		t.Fatal(err)
	}
	spec := d.Spec.Template.Spec
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		if c.Image != want {
			t.Errorf("%s: container %s runs %s, want the release chart's %s", what, c.Name, c.Image, want)
		}
	}
	pods, err := listOperatorPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		for _, c := range p.Spec.Containers {
			if c.Image != want {
				t.Errorf("%s: pod %s's container %s runs %s, want %s", what, p.Name, c.Name, c.Image, want)
			}
		}
	}
	fmt.Printf("e2e: %s: the manager runs the release chart's %s\n", what, want)
}

// helmUpgrade: this release's chart replaces the previous release under the
// upgrade feature's load (a client that never retries, writing Drinks
// through every version) and its checks (no failed request, operands kept
// and rewritten only as announced, no Guestbook failover, then a stable
// window), twice: over the previous release installed with kubectl apply
// -k and adopted as docs/install.md says (annotate, label, helm install),
// and, after helm uninstall kept the CRDs and the fixture, over the
// previous release installed from the chart the generator makes from its
// tree (helm upgrade).
func helmUpgrade() features.Feature {
	var prev previousRelease
	fx := &releaseFixture{}
	upgradeTo := func(cfg *envconf.Config, verb string) func() (string, error) {
		return func() (string, error) {
			chart, err := releaseChart()
			if err != nil {
				return "", err
			}
			args := []string{verb, helmRelease, chart, "--namespace", helmNamespace}
			switch verb {
			case "upgrade":
				// As docs/install.md gives it, read from there.
				if args, err = documentedHelmUpgrade(chart); err != nil {
					return "", err
				}
			case "install":
				// Adopting: the objects' fields belong to kubectl's
				// server-side apply until Helm's takes them.
				args = append(args, "--force-conflicts")
			}
			return helm(cfg, args...)
		}
	}
	return features.New("helm adopting the previous release's kustomize install, and helm upgrade from its chart, under load").WithLabel("area", "helm").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			var err error
			if prev, err = preparePreviousRelease(""); err != nil {
				t.Fatal(err)
			}
			fx.previous = prev.version
			if out, err := helm(cfg, "uninstall", helmRelease, "--namespace", helmNamespace, "--wait", "--timeout", "3m"); err != nil {
				t.Fatalf("helm uninstall: %v: %s", err, out)
			}
			uninstall(t, cfg)
			return ctx
		}).
		Assess("the previous release's kustomize install adopted by helm install under load", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// A user who chose the Guestbook image under the previous
			// release keeps it through both upgrades.
			installPrevious(ctx, t, cfg, prev, fx, userGuestbookImage)
			// docs/install.md, "Moving a kustomize install to Helm".
			rendered, err := exec.Command("kubectl", "kustomize", prev.config()).Output()
			if err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{
				{"annotate", "-f", "-", "--overwrite", "meta.helm.sh/release-name=" + helmRelease, "meta.helm.sh/release-namespace=" + helmNamespace},
				{"label", "-f", "-", "--overwrite", "app.kubernetes.io/managed-by=Helm"},
			} {
				cmd := exec.Command("kubectl", append([]string{"--kubeconfig", cfg.KubeconfigFile()}, args...)...)
				cmd.Stdin = strings.NewReader(string(rendered))
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("kubectl %s: %v: %s", args[0], err, out)
				}
			}
			rolloutUnderLoad(ctx, t, fx, "helm install adopting "+prev.version+"'s kustomize install", upgradeTo(cfg, "install"))
			fx.checkGuestbookImage(ctx, t, "helm install adopting "+prev.version)
			return ctx
		}).
		Assess("helm upgrade from the previous release's chart under load", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// The CRDs, Drinks and Guestbook stay through helm uninstall;
			// the previous release's chart takes them over again.
			if out, err := helm(cfg, "uninstall", helmRelease, "--namespace", helmNamespace, "--wait", "--timeout", "3m"); err != nil {
				t.Fatalf("helm uninstall: %v: %s", err, out)
			}
			chart, err := previousChart(prev)
			if err != nil {
				t.Fatal(err)
			}
			// Installed as a user installs a release's chart: no values of
			// one's own, the image the chart's.
			if out, err := helm(cfg, "install", helmRelease, chart, "--namespace", helmNamespace); err != nil {
				t.Fatalf("helm install of %s's chart: %v: %s", prev.version, err, out)
			}
			if err := waitOperatorReady(ctx, 3*time.Minute); err != nil {
				t.Fatalf("%s: %v", prev.version, err)
			}
			waitSettled(ctx, t, 2*time.Minute)
			rolloutUnderLoad(ctx, t, fx, "helm upgrade from "+prev.version+"'s chart", upgradeTo(cfg, "upgrade"))
			fx.checkGuestbookImage(ctx, t, "helm upgrade from "+prev.version)
			checkManagerImage(ctx, t, cfg, "helm upgrade from "+prev.version)
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cleanUp(t, cfg, "namespace", releaseNS, releaseLoadNS, "--ignore-not-found")
			return ctx
		}).
		Feature()
}

//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/bootstrap"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/operanddiff"
	"github.com/example/myoperator/test/podrunner"
)

const (
	releaseNS     = "e2e-release"
	releaseLoadNS = "e2e-release-load"
	releaseGB     = "e2e-release"
)

// stableFor is how long, after an upgrade or a rollback settled, no
// operand and no custom resource may change (cluster-api's upgrade test
// asks the same of its objects). E2E_STABLE_FOR shortens it while working
// on the feature; the suite's default is the two minutes.
var stableFor = func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("E2E_STABLE_FOR")); err == nil {
		return d
	}
	return 2 * time.Minute
}()

// previousRelease is a release the upgrade starts from, built from its
// commit by hack/previous-release.sh.
type previousRelease struct{ version, commit, dir string }

// oldestUpgradeFrom is the oldest release the upgrade starts from besides
// the newest, from E2E_UPGRADE_FROM (make test-e2e passes it): a user may
// skip releases, and the oldest supported one is the last whose bootstrap
// wrote its defaults into the OperatorConfig's spec, which this tree's
// bootstrap must release (bootstrap.EarlierDefaults).
var oldestUpgradeFrom = os.Getenv("E2E_UPGRADE_FROM")

// image is the name the previous release's image gets here: a name of its
// own, so that it never replaces the current tree's image, whatever tags
// the two trees' manifests carry.
func (p previousRelease) image() string { return "localhost/myoperator-release:" + p.version }

// config is a kustomization of the release's own install (its
// config/default) with only the image renamed (image()).
func (p previousRelease) config() string {
	return filepath.Join(root, "bin", "releases", "overlays", runName, p.version)
}

// preparePreviousRelease checks a release out of git (version, or the
// newest release before this tree when empty), builds it with its own
// Makefile and its image with its own Dockerfile, and writes the
// kustomization that installs it.
func preparePreviousRelease(version string) (previousRelease, error) {
	var p previousRelease
	cmd := exec.Command(filepath.Join(root, "hack", "previous-release.sh"))
	if version != "" {
		cmd.Args = append(cmd.Args, version)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return p, fmt.Errorf("hack/previous-release.sh: %w\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	f := strings.Fields(lines[len(lines)-1])
	if len(f) != 3 {
		return p, fmt.Errorf("hack/previous-release.sh printed %q", out)
	}
	p = previousRelease{version: f[0], commit: f[1], dir: f[2]}
	args := podrunner.Podman("build", "-q", "-t", p.image(), p.dir)
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		return p, fmt.Errorf("podman build of %s: %w: %s", p.version, err, out)
	}
	if mode.realNode {
		if err := importImages(p.image()); err != nil {
			return p, err
		}
	}
	// The release's own install, as the suite installs the current tree.
	rel, err := filepath.Rel(p.config(), filepath.Join(p.dir, installedConfig()))
	if err != nil {
		return p, err
	}
	name, tag, _ := strings.Cut(p.image(), ":")
	kust := fmt.Sprintf(`# Written by the e2e suite: release %s (commit %s) as its %s
# installs it, with its image under a name of its own.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %s
images:
- name: ghcr.io/example/myoperator
  newName: %s
  newTag: %s
`, p.version, p.commit, installedConfig(), rel, name, tag)
	if err := os.MkdirAll(p.config(), 0o755); err != nil {
		return p, err
	}
	return p, os.WriteFile(filepath.Join(p.config(), "kustomization.yaml"), []byte(kust), 0o644)
}

// releaseUpgrade: a release, built from its commit, runs with Drinks of
// every version and a Guestbook; a client that never retries keeps writing
// Drinks through every version while the current tree is applied over it
// with kubectl apply -k, and again while the release is applied back (the
// rollback). Neither loses a request, and the operands survive both: same
// UIDs, each rewritten at most once and only as the release record says,
// then nothing changes for two minutes. from is the release (vX.Y.Z), or
// empty for the newest before this tree, which the feature then writes
// into newest.
func releaseUpgrade(from string, newest *string) features.Feature {
	var prev previousRelease
	fx := &releaseFixture{}
	name := "upgrade from the newest release under load, and back"
	if from != "" {
		name = "upgrade from " + from + ", the oldest release supported, under load, and back"
	}
	return features.New(name).WithLabel("area", "upgrade").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			var err error
			if prev, err = preparePreviousRelease(from); err != nil {
				t.Fatal(err)
			}
			if newest != nil {
				*newest = prev.version
			}
			fmt.Printf("e2e: release %s, commit %s, image %s\n", prev.version, prev.commit, prev.image())
			fx.previous = prev.version
			uninstall(t, cfg)
			// No configuration edit: the upgrade is the one a user who
			// never touched the OperatorConfig makes.
			installPrevious(ctx, t, cfg, prev, fx, "")
			return ctx
		}).
		Assess("upgrade to this tree under load, with no configuration edit", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			rolloutUnderLoad(ctx, t, fx, "upgrade", applyKustomization(cfg, filepath.Join(root, installedConfig())))
			fx.checkGuestbookImage(ctx, t, "upgrade")
			return ctx
		}).
		Assess("rollback to the previous release under load", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// Twice for a StatefulSet whose image follows the default: once
			// the previous release's CRD is back, this tree's leader reads
			// that CRD's default image and applies it; then the previous
			// release, leading, removes the probes (RELEASES.md).
			if fx.userImage == "" {
				fx.maxRewrites = map[string]int{"StatefulSet": 2}
			}
			rolloutUnderLoad(ctx, t, fx, "rollback to "+prev.version, applyKustomization(cfg, prev.config()))
			fx.checkRolledBackImage(ctx, t)
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// Back to the suite's install: the previous release's objects
			// (some have names the current tree no longer uses) go first.
			if prev.dir != "" {
				if out, err := kubectl(cfg, "delete", "-k", prev.config(), "--ignore-not-found", "--wait=true", "--timeout=3m"); err != nil {
					t.Errorf("removing %s: %v: %s", prev.version, err, out)
				}
			}
			uninstall(t, cfg)
			cleanUp(t, cfg, "namespace", releaseNS, releaseLoadNS)
			installAndWait(ctx, t, cfg)
			return ctx
		}).
		Feature()
}

// installPrevious installs the previous release from its own
// kustomization, waits for it, sets spec.guestbook.image to userImage as a
// user does (kubectl patch) unless it is empty, and creates the fixture it
// manages.
func installPrevious(ctx context.Context, t *testing.T, cfg *envconf.Config, prev previousRelease, fx *releaseFixture, userImage string) {
	t.Helper()
	if out, err := kubectl(cfg, "apply", "--server-side", "-k", prev.config()); err != nil {
		t.Fatalf("installing %s: %v: %s", prev.version, err, out)
	}
	if err := waitOperatorReady(ctx, 3*time.Minute); err != nil {
		t.Fatalf("%s: %v", prev.version, err)
	}
	fx.previousImage = previousGuestbookImage(ctx, t, prev.version)
	if fx.userImage = userImage; userImage != "" {
		fmt.Printf("e2e: a user sets spec.guestbook.image %s (kubectl patch) before the upgrade\n", userImage)
		patchConfig(t, cfg, fmt.Sprintf(`{"spec":{"guestbook":{"image":%q}}}`, userImage))
	}
	fx.create(ctx, t, cfg)
}

// releaseFixture is what the previous release manages before the upgrade.
type releaseFixture struct {
	previous string                  // the previous release's version
	operands map[string]operandState // by operandKey
	// previousImage is the previous release's default Guestbook image (in
	// effect before any user's choice); userImage the one a user set, if
	// any.
	previousImage, userImage string
	// maxRewrites is, by kind, how often a rollout may rewrite one
	// operand when more than once (RELEASES.md says why).
	maxRewrites map[string]int
}

// checkGuestbookImage: after an upgrade, the Guestbook pods run the image
// the OperatorConfig's status says is in effect, and they are Ready: the
// user's image where a user set one (source user), else this release's
// default (source default), which the previous release's bootstrap had
// written into the spec as its own default and this release's bootstrap
// removed.
func (fx *releaseFixture) checkGuestbookImage(ctx context.Context, t *testing.T, what string) {
	t.Helper()
	want, source := fx.userImage, operatorv1alpha1.SourceUser
	if want == "" {
		want, source = managerGuestbookImage(ctx, t), operatorv1alpha1.SourceDefault
	}
	oc := &operatorv1alpha1.OperatorConfig{}
	testenv.Eventually(t, 60*time.Second, func() string {
		if err := kc.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, oc); err != nil {
			return err.Error()
		}
		e := oc.Status.Effective
		if e == nil || oc.Status.ObservedGeneration != oc.Generation || e.GuestbookImage != want || e.Sources.GuestbookImage != source {
			return fmt.Sprintf("OperatorConfig status.effective %+v (observed generation %d of %d), want guestbook image %s from %s",
				e, oc.Status.ObservedGeneration, oc.Generation, want, source)
		}
		return ""
	})
	wantSpec := operatorv1alpha1.OperatorConfigSpec{Guestbook: operatorv1alpha1.GuestbookConfig{Image: fx.userImage}}
	if oc.Spec != wantSpec {
		t.Errorf("%s: OperatorConfig spec %+v, want %+v: the previous release's defaults removed, a user's choice kept", what, oc.Spec, wantSpec)
	}
	fmt.Printf("e2e: %s: OperatorConfig spec %+v; annotation %s: %q\n", what, oc.Spec, bootstrap.ReleasedAnnotation, oc.Annotations[bootstrap.ReleasedAnnotation])
	fx.waitGuestbookPods(ctx, t, what, want)
}

// checkRolledBackImage: the previous release's CRD defaults fill the
// fields this release's bootstrap emptied, so a rollback brings back the
// previous release's default image (RELEASES.md says so) unless a user
// chose one.
func (fx *releaseFixture) checkRolledBackImage(ctx context.Context, t *testing.T) {
	t.Helper()
	want := fx.userImage
	if want == "" {
		want = fx.previousImage
	}
	fx.waitGuestbookPods(ctx, t, "rollback", want)
}

// waitGuestbookPods waits until the fixture's Guestbook StatefulSet names
// image and every pod of it runs that image and is Ready.
func (fx *releaseFixture) waitGuestbookPods(ctx context.Context, t *testing.T, what, image string) {
	t.Helper()
	gb := &webappv1.Guestbook{}
	n := 0
	testenv.Eventually(t, 3*time.Minute, func() string {
		if err := kc.Get(ctx, client.ObjectKey{Name: releaseGB}, gb); err != nil {
			return err.Error()
		}
		ns := gb.Status.OperandNamespace
		sts := &appsv1.StatefulSet{}
		if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: releaseGB}, sts); err != nil {
			return err.Error()
		}
		if got := sts.Spec.Template.Spec.Containers[0].Image; got != image {
			return fmt.Sprintf("StatefulSet %s/%s names image %s, want %s", ns, releaseGB, got, image)
		}
		pods := &corev1.PodList{}
		if err := kc.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(sts.Spec.Selector.MatchLabels)); err != nil {
			return err.Error()
		}
		if n = len(pods.Items); int32(n) != *sts.Spec.Replicas {
			return fmt.Sprintf("%d pods, want %d", n, *sts.Spec.Replicas)
		}
		for _, p := range pods.Items {
			ready := slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
				return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
			})
			if p.Spec.Containers[0].Image != image || !ready || !p.DeletionTimestamp.IsZero() {
				return fmt.Sprintf("pod %s: image %s, Ready %t, deleting %t; want %s Ready", p.Name, p.Spec.Containers[0].Image, ready, !p.DeletionTimestamp.IsZero(), image)
			}
		}
		return ""
	})
	fmt.Printf("e2e: %s: the Guestbook's %d pods run %s and are Ready\n", what, n, image)
}

// create writes Drinks through every version and a Guestbook, waits for
// them to be Ready and records their operands.
func (fx *releaseFixture) create(ctx context.Context, t *testing.T, cfg *envconf.Config) {
	t.Helper()
	var m strings.Builder
	m.WriteString("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + releaseNS + "}\n")
	for i := range 3 {
		fmt.Fprintf(&m, "---\napiVersion: example.com/v1alpha1\nkind: Drink\nmetadata: {name: alpha-%d, namespace: %s}\nspec: {name: Tea %d, drink: tea}\n", i, releaseNS, i)
		fmt.Fprintf(&m, "---\napiVersion: example.com/v1beta1\nkind: Drink\nmetadata: {name: beta-%d, namespace: %s}\nspec: {name: Coffee %d, drink: coffee, size: Large, sugar: %d}\n", i, releaseNS, i, i)
		fmt.Fprintf(&m, "---\napiVersion: example.com/v1\nkind: Drink\nmetadata: {name: one-%d, namespace: %s}\nspec: {displayName: Cocoa %d, beverage: cocoa, size: Small, sugarCubes: %d, extras: [cinnamon]}\n", i, releaseNS, i, i)
	}
	fmt.Fprintf(&m, "---\napiVersion: webapp.my.domain/v1\nkind: Guestbook\nmetadata: {name: %s}\nspec: {size: 3, configMapName: release-conf, alias: Phone}\n", releaseGB)
	testenv.Eventually(t, 60*time.Second, func() string {
		if out, err := apply(cfg, m.String()); err != nil {
			return out
		}
		return ""
	})
	waitSettled(ctx, t, 2*time.Minute)
	var err error
	if fx.operands, err = listOperands(ctx); err != nil {
		t.Fatal(err)
	}
	var names []string
	for k := range fx.operands {
		names = append(names, k)
	}
	slices.Sort(names)
	fmt.Printf("e2e: %d operands of the previous release: %s\n", len(names), strings.Join(names, " "))
	if len(fx.operands) < 10 {
		t.Fatalf("%d operands, want at least 9 ConfigMaps and the Guestbook's StatefulSet and Service", len(fx.operands))
	}
}

// waitSettled waits until every Drink in the cluster and the fixture's
// Guestbook are Ready at their generation.
func waitSettled(ctx context.Context, t *testing.T, timeout time.Duration) {
	t.Helper()
	testenv.Eventually(t, timeout, func() string {
		list := &drinksv1.DrinkList{}
		if err := kc.List(ctx, list); err != nil {
			return err.Error()
		}
		for i := range list.Items {
			if d := &list.Items[i]; !readyDrink(d) {
				return fmt.Sprintf("Drink %s/%s not Ready at generation %d: observed %d, %+v", d.Namespace, d.Name, d.Generation, d.Status.ObservedGeneration, d.Status.Conditions)
			}
		}
		gb := &webappv1.Guestbook{}
		if err := kc.Get(ctx, client.ObjectKey{Name: releaseGB}, gb); err != nil {
			return err.Error()
		}
		if c := findCondition(gb.Status.Conditions, "Ready"); c == nil || c.Status != metav1.ConditionTrue || gb.Status.ObservedGeneration != gb.Generation || gb.Status.Active == "" {
			return fmt.Sprintf("Guestbook %s not Ready: active %q, %+v", releaseGB, gb.Status.Active, gb.Status.Conditions)
		}
		return ""
	})
}

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// operandState is what the test compares of an operand: its identity,
// its version and, by field path, what a controller writes of it (the
// metadata it sets, data or spec; operanddiff.Flatten). Status, written by
// other controllers, is left out.
type operandState struct {
	UID             types.UID
	ResourceVersion string
	Fields          map[string]string
}

// operandKey names an operand in messages: its kind, then namespace/name.
func operandKey(kind string, o metav1.Object) string {
	return kind + " " + o.GetNamespace() + "/" + o.GetName()
}

// kindOf is the kind an operandKey names.
func kindOf(key string) string { return strings.Fields(key)[0] }

func stateOf(o client.Object) (operandState, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return operandState{}, fmt.Errorf("%T %s/%s: %w", o, o.GetNamespace(), o.GetName(), err)
	}
	return operandState{UID: o.GetUID(), ResourceVersion: o.GetResourceVersion(), Fields: operanddiff.Flatten(u)}, nil
}

// diff lists the field paths that changed between two states of an
// operand, each with its value before and after; none for a write of
// status only.
func (s operandState) diff(next operandState) []string {
	var d []string
	for _, p := range operanddiff.Changed(s.Fields, next.Fields) {
		d = append(d, fmt.Sprintf("%s: %s -> %s", p, shownValue(s.Fields, p), shownValue(next.Fields, p)))
	}
	return d
}

// shownValue is a field's value for a message: its JSON, cut short (a
// container's command or a ConfigMap's file is long), or (absent).
func shownValue(fields map[string]string, path string) string {
	v, ok := fields[path]
	if !ok {
		return "(absent)"
	}
	if r := []rune(v); len(r) > 80 {
		return string(r[:77]) + "..."
	}
	return v
}

// listOperands reads every operand of the fixture: the Drinks'
// ConfigMaps, and the Guestbook's StatefulSet and Service.
func listOperands(ctx context.Context) (map[string]operandState, error) {
	out := map[string]operandState{}
	cms := &corev1.ConfigMapList{}
	if err := kc.List(ctx, cms, client.InNamespace(releaseNS)); err != nil {
		return nil, err
	}
	for i := range cms.Items {
		cm := &cms.Items[i]
		if metav1.GetControllerOf(cm) == nil {
			continue
		}
		if err := addOperand(out, "ConfigMap", cm); err != nil {
			return nil, err
		}
	}
	sets := &appsv1.StatefulSetList{}
	if err := kc.List(ctx, sets, client.InNamespace("guestbook"), client.MatchingLabels{"app.kubernetes.io/instance": releaseGB}); err != nil {
		return nil, err
	}
	for i := range sets.Items {
		if err := addOperand(out, "StatefulSet", &sets.Items[i]); err != nil {
			return nil, err
		}
	}
	svcs := &corev1.ServiceList{}
	if err := kc.List(ctx, svcs, client.InNamespace("guestbook"), client.MatchingLabels{"app.kubernetes.io/instance": releaseGB}); err != nil {
		return nil, err
	}
	for i := range svcs.Items {
		if err := addOperand(out, "Service", &svcs.Items[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// addOperand records an operand's state under its key.
func addOperand(out map[string]operandState, kind string, o client.Object) error {
	st, err := stateOf(o)
	if err != nil {
		return err
	}
	out[operandKey(kind, o)] = st
	return nil
}

// operandWatch records every write to the fixture's operands while it
// runs: each one's new state, so that a write that a later one undid
// still counts.
type operandWatch struct {
	stop   context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	writes map[string][]operandState
	errs   []string
}

func watchOperands(ctx context.Context, t *testing.T) *operandWatch {
	t.Helper()
	wctx, cancel := context.WithCancel(ctx)
	w := &operandWatch{stop: cancel, writes: map[string][]operandState{}}
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + releaseGB}
	start := func(kind string, open func() (watch.Interface, error), operand func(o any) (client.Object, bool)) {
		wi, err := open()
		if err != nil {
			t.Fatalf("watching %ss: %v", kind, err)
		}
		w.wg.Go(func() {
			defer wi.Stop()
			for {
				select {
				case <-wctx.Done():
					return
				case ev, ok := <-wi.ResultChan():
					if !ok {
						w.mu.Lock()
						w.errs = append(w.errs, kind+" watch closed early")
						w.mu.Unlock()
						return
					}
					if ev.Type == watch.Error || ev.Type == watch.Bookmark {
						continue
					}
					o, ok := operand(ev.Object)
					if !ok {
						continue
					}
					st, err := stateOf(o)
					if ev.Type == watch.Deleted {
						st.ResourceVersion = "deleted"
					}
					w.mu.Lock()
					if err != nil {
						w.errs = append(w.errs, err.Error())
					} else {
						w.writes[operandKey(kind, o)] = append(w.writes[operandKey(kind, o)], st)
					}
					w.mu.Unlock()
				}
			}
		})
	}
	rv := func(list metav1.ListInterface, err error) string {
		if err != nil {
			t.Fatal(err)
		}
		return list.GetResourceVersion()
	}
	cmRV := rv(cs.CoreV1().ConfigMaps(releaseNS).List(ctx, metav1.ListOptions{}))
	start("ConfigMap", func() (watch.Interface, error) {
		return cs.CoreV1().ConfigMaps(releaseNS).Watch(wctx, metav1.ListOptions{ResourceVersion: cmRV})
	}, func(o any) (client.Object, bool) {
		cm, ok := o.(*corev1.ConfigMap)
		return cm, ok && metav1.GetControllerOf(cm) != nil
	})
	stsRV := rv(cs.AppsV1().StatefulSets("guestbook").List(ctx, sel))
	start("StatefulSet", func() (watch.Interface, error) {
		return cs.AppsV1().StatefulSets("guestbook").Watch(wctx, metav1.ListOptions{LabelSelector: sel.LabelSelector, ResourceVersion: stsRV})
	}, func(o any) (client.Object, bool) {
		s, ok := o.(*appsv1.StatefulSet)
		return s, ok
	})
	svcRV := rv(cs.CoreV1().Services("guestbook").List(ctx, sel))
	start("Service", func() (watch.Interface, error) {
		return cs.CoreV1().Services("guestbook").Watch(wctx, metav1.ListOptions{LabelSelector: sel.LabelSelector, ResourceVersion: svcRV})
	}, func(o any) (client.Object, bool) {
		s, ok := o.(*corev1.Service)
		return s, ok
	})
	return w
}

// finish stops the watch and returns the writes it saw.
func (w *operandWatch) finish() (map[string][]operandState, []string) {
	w.stop()
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes, w.errs
}

// leaseWatch polls the operator's Lease and records every change of
// holder, with the gap between the old holder's last renewal and the new
// holder's acquisition.
type leaseWatch struct {
	stop context.CancelFunc
	done chan struct{}
	mu   sync.Mutex
	log  []string
}

func watchLease(ctx context.Context) *leaseWatch {
	wctx, cancel := context.WithCancel(ctx)
	lw := &leaseWatch{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(lw.done)
		var holder string
		var lastRenew time.Time
		for wctx.Err() == nil {
			if l, err := leaseOf(wctx); err == nil {
				h := holderPod(l)
				if holder != "" && h != holder && h != "" {
					gap := "unknown"
					if l.Spec.AcquireTime != nil && !lastRenew.IsZero() {
						gap = l.Spec.AcquireTime.Sub(lastRenew).Round(time.Millisecond).String()
					}
					lw.mu.Lock()
					lw.log = append(lw.log, fmt.Sprintf("%s -> %s (handover %s after the last renewal)", holder, h, gap))
					lw.mu.Unlock()
				}
				if h != "" {
					holder = h
					if l.Spec.RenewTime != nil {
						lastRenew = l.Spec.RenewTime.Time
					}
				}
			}
			select {
			case <-wctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return lw
}

func (lw *leaseWatch) finish() []string {
	lw.stop()
	<-lw.done
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return slices.Clone(lw.log)
}

// settledWebhookErrors reads the API server's webhook error counters once
// they hold still for 2 s (30 s at most): the window of an upgrade starts
// there. Right after a setup installed the release being replaced, the
// watch cache may still be converting for its watchers calls it sent
// before the webhook Service routed to a ready pod, and they would count
// as the upgrade's: in a clean-clone make ci the API server logged refused
// calls until 09:59:32.4, after the baseline had been read, none from the
// upgrade applied at 09:59:39.5 on, and the check counted 2 failures.
func settledWebhookErrors(ctx context.Context) (webhookErrorCounts, error) {
	prev, err := apiserverWebhookErrors(ctx)
	for deadline := time.Now().Add(30 * time.Second); err == nil && time.Now().Before(deadline); {
		time.Sleep(2 * time.Second)
		var cur webhookErrorCounts
		if cur, err = apiserverWebhookErrors(ctx); err == nil && cur.Sub(prev).Total() == 0 {
			return cur, nil
		}
		prev = cur
	}
	return prev, err
}

// rolloutUnderLoad applies config over the running operator while the
// load client writes, and asserts what the issue asks of an upgrade: no
// failed request (by the client and by the API server's own counters), no
// operand recreated, each rewritten at most once and only in the ways the
// release record announces, no Guestbook failover, every Drink Ready at
// its generation, then two minutes without a change.
func rolloutUnderLoad(ctx context.Context, t *testing.T, fx *releaseFixture, what string, install func() (string, error)) {
	t.Helper()
	gb := &webappv1.Guestbook{}
	if err := kc.Get(ctx, client.ObjectKey{Name: releaseGB}, gb); err != nil {
		t.Fatal(err)
	}
	activeBefore := gb.Status.Active
	before, err := listOperands(ctx)
	if err != nil {
		t.Fatal(err)
	}
	errsBefore, err := settledWebhookErrors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ow := watchOperands(ctx, t)
	lw := watchLease(ctx)
	load := startLoad(ctx, t, releaseLoadNS)
	time.Sleep(3 * time.Second) // the load runs against the release being replaced first

	applied := time.Now()
	if out, err := install(); err != nil {
		load.Stop()
		t.Fatalf("%s: %v: %s", what, err, out)
	}
	firstServing, done, err := waitRollout(ctx, applied, 4*time.Minute)
	if err != nil {
		load.Stop()
		t.Fatalf("%s: %v", what, err)
	}
	time.Sleep(5 * time.Second) // and against the new one for a while
	rep := load.Stop()
	errsAfter, err := apiserverWebhookErrors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	handovers := lw.finish()
	fmt.Printf("e2e: %s: applied at %s; first new pod serving after %s, rollout complete (every pod new and Ready, old ones gone, Lease held by a new one) after %s\n",
		what, applied.Format("15:04:05.000"), firstServing.Round(time.Millisecond), done.Round(time.Millisecond))
	fmt.Printf("e2e: %s: load: %s\n", what, rep)
	grown := errsAfter.Sub(errsBefore)
	fmt.Printf("e2e: %s: API server webhook errors during it: %s\n", what, grown)
	fmt.Printf("e2e: %s: Lease holder changes: %d %v\n", what, len(handovers), handovers)
	if rep.Requests == 0 {
		t.Errorf("%s: the load client sent no request", what)
	}
	if rep.Failures > 0 {
		t.Errorf("%s: %d of %d requests failed", what, rep.Failures, rep.Requests)
	}
	if grown.Total() > 0 {
		t.Errorf("%s: the API server counted failed webhook calls: %s", what, grown)
	}

	waitSettled(ctx, t, 2*time.Minute)
	writes, werrs := ow.finish()
	for _, e := range werrs {
		t.Errorf("%s: %s", what, e)
	}
	after, err := listOperands(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkOperandWrites(t, what, fx, before, after, writes)

	// An upgrade takes nothing for another writer's change: no operand of
	// the fixture "corrected" (the operator's drift events) while it ran.
	// (The load's Drinks change all the time; their ConfigMaps follow.)
	events := &eventsv1.EventList{}
	if err := kc.List(ctx, events); err != nil {
		t.Fatal(err)
	}
	corrections := 0
	for _, e := range events.Items {
		fixture := e.Regarding.Namespace == releaseNS || (e.Regarding.Kind == "Guestbook" && e.Regarding.Name == releaseGB)
		if fixture && strings.HasSuffix(e.Reason, "Corrected") && e.CreationTimestamp.After(applied.Add(-time.Second)) {
			corrections++
			t.Errorf("%s: event %s on %s %s: %s", what, e.Reason, e.Regarding.Kind, e.Regarding.Name, e.Note)
		}
	}
	fmt.Printf("e2e: %s: drift corrections reported on the fixture during it: %d\n", what, corrections)

	if err := kc.Get(ctx, client.ObjectKey{Name: releaseGB}, gb); err != nil {
		t.Fatal(err)
	}
	switch {
	case gb.Status.Active != activeBefore && podTemplateAnnounced(fx.previous):
		// The release record announces a change of the Guestbook's pod
		// template: the StatefulSet rolls its pods once, and the active
		// role moves off the pod being replaced.
		if !meta.IsStatusConditionTrue(gb.Status.Conditions, webappv1.ConditionReady) {
			t.Errorf("%s: the Guestbook's pods rolled (announced) and it is not Ready: %+v", what, gb.Status.Conditions)
		}
		fmt.Printf("e2e: %s: Guestbook active %s -> %s: its pods rolled once for the pod template change the release record announces; Ready again\n", what, activeBefore, gb.Status.Active)
	case gb.Status.Active != activeBefore:
		t.Errorf("%s: Guestbook failover: active %q, was %q", what, gb.Status.Active, activeBefore)
	default:
		fmt.Printf("e2e: %s: Guestbook failovers: 0 (active %s throughout)\n", what, activeBefore)
	}
	checkStable(ctx, t, what)
}

// applyKustomization installs a kustomization over what runs, as a user
// upgrades a kustomize install.
func applyKustomization(cfg *envconf.Config, dir string) func() (string, error) {
	return func() (string, error) {
		out, err := kubectl(cfg, "apply", "--server-side", "-k", dir)
		if err != nil {
			err = fmt.Errorf("kubectl apply --server-side -k %s: %w", dir, err)
		}
		return out, err
	}
}

// waitRollout waits until the operator's Deployment has rolled out: its
// pods all run the new template and are Ready (the suite's runner says so
// from the real probe), no old pod is left, not even terminating, and a
// new one holds the Lease. It returns when the first new pod served and when the rollout
// was done, both from applied.
func waitRollout(ctx context.Context, applied time.Time, timeout time.Duration) (first, done time.Duration, err error) {
	deadline := time.Now().Add(timeout)
	for {
		d := &appsv1.Deployment{}
		if err := kc.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: operatorDeployment}, d); err != nil {
			return 0, 0, err
		}
		newPods, oldPods, readyNew := 0, 0, 0
		hash := ""
		if d.Status.ObservedGeneration >= d.Generation {
			hash, err = newReplicaSetHash(ctx, d)
			if err != nil {
				return 0, 0, err
			}
		}
		// Readiness from the pod runner (the real probe); the pods
		// themselves from the API, terminating ones included.
		running, err := operatorPodList(ctx)
		if err != nil {
			return 0, 0, err
		}
		ready := map[string]bool{}
		for _, p := range running {
			ready[p.name] = p.ready
		}
		pods := &corev1.PodList{}
		if err := kc.List(ctx, pods, client.InNamespace(operatorNS), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
			return 0, 0, err
		}
		holder, _ := leaseHolder(ctx)
		newHolder := false
		for i := range pods.Items {
			pod := &pods.Items[i]
			if hash != "" && pod.Labels["pod-template-hash"] == hash && pod.DeletionTimestamp == nil {
				newPods++
				if ready[pod.Name] {
					readyNew++
				}
				newHolder = newHolder || pod.Name == holder
			} else {
				oldPods++
			}
		}
		if readyNew > 0 && first == 0 {
			first = time.Since(applied)
		}
		want := int(*d.Spec.Replicas)
		if hash != "" && newPods == want && readyNew == want && oldPods == 0 && d.Status.UpdatedReplicas == int32(want) && d.Status.AvailableReplicas == int32(want) && newHolder {
			return first, time.Since(applied), nil
		}
		if time.Now().After(deadline) {
			return first, 0, fmt.Errorf("rollout not done after %s: %d new pods (%d ready), %d old, Deployment status %+v", timeout, newPods, readyNew, oldPods, d.Status)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// newReplicaSetHash is the pod-template-hash of the Deployment's
// current ReplicaSet.
func newReplicaSetHash(ctx context.Context, d *appsv1.Deployment) (string, error) {
	sets := &appsv1.ReplicaSetList{}
	if err := kc.List(ctx, sets, client.InNamespace(operatorNS), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
		return "", err
	}
	for i := range sets.Items {
		rs := &sets.Items[i]
		if rs.Annotations["deployment.kubernetes.io/revision"] == d.Annotations["deployment.kubernetes.io/revision"] {
			return rs.Labels["pod-template-hash"], nil
		}
	}
	return "", nil
}

// checkOperandWrites asserts that no operand was recreated and that each
// was written at most once, changing only field paths the release record
// announces.
func checkOperandWrites(t *testing.T, what string, fx *releaseFixture, before, after map[string]operandState, writes map[string][]operandState) {
	t.Helper()
	allowed, err := operandAnnouncements(fx.previous)
	if err != nil {
		t.Error(err)
	}
	recreated, rewritten := 0, 0
	for _, key := range slices.Sorted(maps.Keys(fx.operands)) {
		b, a := before[key], after[key]
		if a.UID == "" {
			t.Errorf("%s: %s is gone", what, key)
			continue
		}
		if a.UID != fx.operands[key].UID {
			recreated++
			t.Errorf("%s: %s was recreated (UID %s, was %s)", what, key, a.UID, fx.operands[key].UID)
		}
		prev := b
		var changes []string
		for _, w := range writes[key] {
			if w.ResourceVersion == prev.ResourceVersion {
				continue
			}
			if w.ResourceVersion == "deleted" {
				t.Errorf("%s: %s was deleted", what, key)
				continue
			}
			d := prev.diff(w)
			if len(d) == 0 { // status only
				prev = w
				continue
			}
			changes = append(changes, strings.Join(d, "; "))
			if err == nil {
				checkAnnounced(t, what, key, fx.previous, prev, w, allowed)
			}
			prev = w
		}
		if len(changes) > 0 {
			rewritten++
			fmt.Printf("e2e: %s: %s rewritten %d time(s): %s\n", what, key, len(changes), strings.Join(changes, " | "))
		}
		if most := max(fx.maxRewrites[kindOf(key)], 1); len(changes) > most {
			t.Errorf("%s: %s rewritten %d times, want at most %d", what, key, len(changes), most)
		}
	}
	fmt.Printf("e2e: %s: operands: %d, recreated %d, rewritten %d\n", what, len(fx.operands), recreated, rewritten)
}

// checkAnnounced fails for every path a write of an operand changed that
// no announcement of the release record covers.
func checkAnnounced(t *testing.T, what, key, previous string, from, to operandState, allowed []operanddiff.Announcement) {
	t.Helper()
	changed := operanddiff.Changed(from.Fields, to.Fields)
	for _, p := range operanddiff.Unannounced(kindOf(key), changed, allowed) {
		t.Errorf("%s: %s: %s changed %s -> %s, which the release record does not announce (no `%s <path>` covering it in the ### Operands parts of RELEASES.md above ## %s)",
			what, key, p, shownValue(from.Fields, p), shownValue(to.Fields, p), kindOf(key), previous)
	}
}

// operandAnnouncements reads the release record's announcements of
// changes to operands between the previous release and this tree.
func operandAnnouncements(previous string) ([]operanddiff.Announcement, error) {
	data, err := os.ReadFile(filepath.Join(root, "RELEASES.md"))
	if err != nil {
		return nil, err
	}
	return operanddiff.ParseAnnouncements(string(data), previous)
}

// checkStable asserts that, for stableFor, no operand of the fixture and
// no custom resource of the operator changes its resourceVersion.
func checkStable(ctx context.Context, t *testing.T, what string) {
	t.Helper()
	snapshot := func() map[string]string {
		out := map[string]string{}
		ops, err := listOperands(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for k, s := range ops {
			out[k] = s.ResourceVersion
		}
		drinks := &drinksv1.DrinkList{}
		gbs := &webappv1.GuestbookList{}
		ocs := &operatorv1alpha1.OperatorConfigList{}
		for _, l := range []client.ObjectList{drinks, gbs, ocs} {
			if err := kc.List(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
		for i := range drinks.Items {
			out[operandKey("Drink", &drinks.Items[i])] = drinks.Items[i].ResourceVersion
		}
		for i := range gbs.Items {
			out[operandKey("Guestbook", &gbs.Items[i])] = gbs.Items[i].ResourceVersion
		}
		for i := range ocs.Items {
			out[operandKey("OperatorConfig", &ocs.Items[i])] = ocs.Items[i].ResourceVersion
		}
		return out
	}
	start := snapshot()
	time.Sleep(stableFor)
	end := snapshot()
	var changed []string
	for _, k := range slices.Sorted(maps.Keys(start)) {
		if end[k] != start[k] {
			changed = append(changed, k)
		}
	}
	if len(changed) > 0 {
		t.Errorf("%s: changed within %s of settling: %s", what, stableFor, strings.Join(changed, ", "))
		return
	}
	fmt.Printf("e2e: %s: %d operands and custom resources unchanged for %s\n", what, len(start), stableFor)
}

// previousGuestbookImage is the previous release's default Guestbook
// image, read from the OperatorConfig its bootstrap created: the spec's
// guestbook.image where that release wrote its defaults there (up to
// v0.2.0), else the image its status says is in effect, from its default.
func previousGuestbookImage(ctx context.Context, t *testing.T, version string) string {
	t.Helper()
	oc := &operatorv1alpha1.OperatorConfig{}
	image := ""
	testenv.Eventually(t, 60*time.Second, func() string {
		if err := kc.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, oc); err != nil {
			return err.Error()
		}
		if image = oc.Spec.Guestbook.Image; image != "" {
			return ""
		}
		e := oc.Status.Effective
		if e == nil || oc.Status.ObservedGeneration != oc.Generation || e.GuestbookImage == "" {
			return fmt.Sprintf("%s's OperatorConfig has no spec.guestbook.image and its status.effective names none yet: %+v", version, e)
		}
		image = e.GuestbookImage
		return ""
	})
	if oc.Spec.Guestbook.Image != "" {
		fmt.Printf("e2e: %s's bootstrap wrote spec.guestbook.image %s\n", version, image)
	} else {
		fmt.Printf("e2e: %s's bootstrap wrote no default into the spec; its Guestbook image in effect: %s\n", version, image)
	}
	return image
}

// podTemplateAnnounced says whether the release record announces a change
// to the Guestbook's pod template (a StatefulSet path under
// spec.template), which rolls its pods.
func podTemplateAnnounced(previous string) bool {
	announced, err := operandAnnouncements(previous)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(announced, func(a operanddiff.Announcement) bool {
		return a.Kind == "StatefulSet" && strings.HasPrefix(a.Path, "spec.template")
	})
}

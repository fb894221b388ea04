//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/test/framework/testenv"
)

// lifecycleNamespaces hold the feature's Drinks; its Guestbook's operands
// run in the operand namespace config/default ships.
var lifecycleNamespaces = []string{"e2e-lifecycle-a", "e2e-lifecycle-b", "e2e-lifecycle-c"}

const (
	lifecycleGuestbook = "lifecycle"
	lifecycleGBConf    = "lifecycle-conf"
	operandNS          = "guestbook"
	// awayValue marks what the feature changes while the operator is
	// removed, for the returning operator to correct.
	awayValue = "changed-while-away"
)

// lifecycleDrinks are the feature's Drinks in each namespace: name, the
// version it is written through, its spec there and the ConfigMap layout
// the operator makes of it.
var lifecycleDrinks = []struct {
	name, version, spec string
	layout              map[string]string
	// drift is the layout key changed while the operator is away.
	drift string
}{
	{"alpha", "v1alpha1", "{name: Tea, drink: tea}", map[string]string{"name": "Tea", "drink": "tea"}, "drink"},
	{"beta", "v1beta1", "{name: Coffee, drink: coffee, size: Large, sugar: 2}",
		map[string]string{"name": "Coffee", "drink": "coffee", "size": "Large", "sugar": "2"}, "sugar"},
	{"one", "v1", "{displayName: Cocoa, beverage: cocoa, size: Small, sugarCubes: 1, extras: [whipped-cream, cinnamon]}",
		map[string]string{"displayName": "Cocoa", "beverage": "cocoa", "size": "Small", "sugarCubes": "1", "extras": "cinnamon,whipped-cream"}, "beverage"},
}

// removalKeepsUsersData: with Drinks written through every version in three
// namespaces and a Guestbook running, `make undeploy` removes the operator
// and nothing else (the CRDs, every Drink, the Guestbook, the OperatorConfig
// and every operand keep their UIDs); `make deploy` (the suite's image,
// config/default) brings it back, and it reconciles the same objects in place:
// the changes made while it was away (a Drink ConfigMap key, the Service
// selector) are corrected with every UID unchanged, and every Drink reads
// through every version again (the new CA injected into the kept CRD). Then `make uninstall`
// without CONFIRM=yes prints the counts, exits non-zero and deletes nothing.
func removalKeepsUsersData() features.Feature {
	var before map[string]types.UID
	var ocSpec operatorv1alpha1.OperatorConfigSpec
	return features.New("install and removal keep users' data").WithLabel("area", "lifecycle").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			var m strings.Builder
			for _, ns := range lifecycleNamespaces {
				fmt.Fprintf(&m, "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns)
				for _, d := range lifecycleDrinks {
					fmt.Fprintf(&m, "---\napiVersion: example.com/%s\nkind: Drink\nmetadata: {name: %s, namespace: %s}\nspec: %s\n", d.version, d.name, ns, d.spec)
				}
			}
			fmt.Fprintf(&m, "---\napiVersion: webapp.my.domain/v1\nkind: Guestbook\nmetadata: {name: %s}\nspec: {size: 2, configMapName: %s, alias: Name}\n",
				lifecycleGuestbook, lifecycleGBConf)
			if out, err := apply(cfg, m.String()); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			for _, ns := range lifecycleNamespaces {
				for _, d := range lifecycleDrinks {
					configMapHas(ns, d.name, d.layout)(ctx, t, cfg)
					conditionTrueWithin("drink", ns, d.name, "Ready", settle)(ctx, t, cfg)
				}
			}
			conditionTrueWithin("guestbook", "", lifecycleGuestbook, "Ready", 90*time.Second)(ctx, t, cfg)
			var err error
			if before, err = lifecycleUIDs(ctx); err != nil {
				t.Fatal(err)
			}
			oc := &operatorv1alpha1.OperatorConfig{}
			if err := kc.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, oc); err != nil {
				t.Fatal(err)
			}
			ocSpec = oc.Spec
			return ctx
		}).
		Assess("make undeploy removes the operator and nothing else", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			start := time.Now()
			out, err := makeTarget(cfg, "undeploy")
			if err != nil {
				t.Fatalf("make undeploy: %v\n%s", err, out)
			}
			fmt.Printf("e2e: make undeploy took %s\n", time.Since(start).Round(time.Millisecond))
			testenv.Eventually(t, 60*time.Second, func() string {
				if n, err := runningOperatorPods(ctx); err != nil || n > 0 {
					return fmt.Sprintf("%d operator pods still run (%v)", n, err)
				}
				return ""
			})
			if err := kc.Get(ctx, client.ObjectKey{Name: operatorNS}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
				t.Errorf("namespace %s after make undeploy: %v, want NotFound", operatorNS, err)
			}
			// The operator's rights go with it, its RoleBinding in the
			// operand namespace included.
			if out, err := kubectl(cfg, "get", "mutatingwebhookconfigurations,validatingwebhookconfigurations,clusterroles,clusterrolebindings,rolebindings",
				"--all-namespaces", "-l", "app.kubernetes.io/name=myoperator", "-o", "name"); err != nil || strings.TrimSpace(out) != "" {
				t.Errorf("after make undeploy (%v): left %s", err, out)
			}
			expectUIDs(ctx, t, before, "after make undeploy")
			return ctx
		}).
		Assess("changes made while the operator is away", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			for _, ns := range lifecycleNamespaces {
				for _, d := range lifecycleDrinks {
					if out, err := kubectl(cfg, "patch", "configmap", d.name, "-n", ns, "--type=merge",
						"-p", fmt.Sprintf(`{"data":{%q:%q}}`, d.drift, awayValue)); err != nil {
						t.Fatalf("%v: %s", err, out)
					}
				}
			}
			if out, err := kubectl(cfg, "patch", "service", lifecycleGuestbook, "-n", operandNS, "--type=merge",
				"-p", fmt.Sprintf(`{"spec":{"selector":{%q:%q}}}`, webappv1.RoleLabel, webappv1.RoleStandby)); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			return ctx
		}).
		Assess("make deploy brings the operator back; it reconciles the same objects in place", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			start := time.Now()
			// On the suite's cluster: its image and config/default.
			out, err := makeTarget(cfg, deployArgs()...)
			if err != nil {
				t.Fatalf("make %s: %v\n%s", strings.Join(deployArgs(), " "), err, out)
			}
			fmt.Printf("e2e: make deploy took %s\n", time.Since(start).Round(time.Millisecond))
			if err := waitOperatorReady(ctx, 3*time.Minute); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, 90*time.Second, func() string {
				for _, ns := range lifecycleNamespaces {
					for _, d := range lifecycleDrinks {
						cm := &corev1.ConfigMap{}
						if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: d.name}, cm); err != nil {
							return err.Error()
						}
						if !maps.Equal(cm.Data, d.layout) {
							return fmt.Sprintf("ConfigMap %s/%s data %v, want %v", ns, d.name, cm.Data, d.layout)
						}
					}
				}
				svc := &corev1.Service{}
				if err := kc.Get(ctx, client.ObjectKey{Namespace: operandNS, Name: lifecycleGuestbook}, svc); err != nil {
					return err.Error()
				}
				if got := svc.Spec.Selector[webappv1.RoleLabel]; got != webappv1.RoleActive {
					return fmt.Sprintf("Service %s selects role %q, want %s", lifecycleGuestbook, got, webappv1.RoleActive)
				}
				return ""
			})
			for _, ns := range lifecycleNamespaces {
				for _, d := range lifecycleDrinks {
					conditionTrueWithin("drink", ns, d.name, "Ready", settle)(ctx, t, cfg)
				}
			}
			conditionTrueWithin("guestbook", "", lifecycleGuestbook, "Ready", settle)(ctx, t, cfg)
			// The CRDs stayed with the old operator's CA; the new one
			// injects its own, so every version reads again.
			testenv.Eventually(t, settle, func() string {
				for _, ns := range lifecycleNamespaces {
					for _, v := range []string{"v1alpha1", "v1beta1"} {
						out, err := kubectl(cfg, "get", "drinks."+v+".example.com", "-n", ns, "-o", "jsonpath={.items[*].metadata.name}")
						if err != nil || out != "alpha beta one" {
							return fmt.Sprintf("Drinks in %s through %s: %q (%v)", ns, v, out, err)
						}
					}
				}
				return ""
			})
			expectUIDs(ctx, t, before, "after make deploy")
			oc := &operatorv1alpha1.OperatorConfig{}
			if err := kc.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, oc); err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(oc.Spec, ocSpec) {
				t.Errorf("OperatorConfig spec %+v after make deploy, was %+v", oc.Spec, ocSpec)
			}
			return ctx
		}).
		Assess("make uninstall without CONFIRM=yes prints the counts and deletes nothing", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			out, err := makeTarget(cfg, "uninstall")
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("make uninstall: %v, want a non-zero exit\n%s", err, out)
			}
			fmt.Printf("e2e: make uninstall without CONFIRM=yes:\n%s", out)
			var lines []string
			for line := range strings.Lines(out) {
				lines = append(lines, strings.Join(strings.Fields(line), " "))
			}
			want := []string{"make uninstall CONFIRM=yes", "1 OperatorConfig (operatorconfigs.operator.example.com), cluster-scoped, named:", "1 cluster"}
			for _, ns := range lifecycleNamespaces {
				want = append(want, fmt.Sprintf("%d %s", len(lifecycleDrinks), ns))
			}
			for _, w := range want {
				if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasSuffix(l, w) }) {
					t.Errorf("make uninstall printed no line ending in %q", w)
				}
			}
			gbs := &webappv1.GuestbookList{}
			if err := kc.List(ctx, gbs); err != nil {
				t.Fatal(err)
			}
			header := fmt.Sprintf("%d Guestbook", len(gbs.Items))
			if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, header) }) {
				t.Errorf("make uninstall did not count %d Guestbooks", len(gbs.Items))
			}
			expectUIDs(ctx, t, before, "after make uninstall without CONFIRM=yes")
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cleanUp(t, cfg, "guestbook", lifecycleGuestbook)
			cleanUp(t, cfg, append([]string{"namespace"}, lifecycleNamespaces...)...)
			return ctx
		}).
		Feature()
}

// makeTarget runs a target of the project's Makefile against the suite's
// cluster the way a user would (KUBECONFIG names the cluster) and returns
// both outputs. The make that started the suite (make test-e2e) does not
// pass its own flags down.
func makeTarget(cfg *envconf.Config, args ...string) (string, error) {
	cmd := exec.Command("make", append([]string{"--no-print-directory", "-C", root}, args...)...)
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "MAKEFLAGS", "MAKELEVEL", "MFLAGS", "KUBECONFIG", "IMG", "CONFIRM", "DEPLOY_CONFIG", "UNDEPLOY_CONFIG":
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "KUBECONFIG="+cfg.KubeconfigFile())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// lifecycleUIDs are the UIDs of what must outlive the operator: the CRDs,
// the feature's namespaces, Drinks and their ConfigMaps, the Guestbook and
// its operands (StatefulSet, Service, ConfigMap, pods), the operand
// namespace and the OperatorConfig.
func lifecycleUIDs(ctx context.Context) (map[string]types.UID, error) {
	uids := map[string]types.UID{}
	get := func(o client.Object, ns, name string) error {
		if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, o); err != nil {
			return fmt.Errorf("%T %s/%s: %w", o, ns, name, err)
		}
		uids[fmt.Sprintf("%T %s/%s", o, ns, name)] = o.GetUID()
		return nil
	}
	var errs []error
	for _, crd := range operatorCRDs {
		errs = append(errs, get(&apiextensionsv1.CustomResourceDefinition{}, "", crd))
	}
	for _, ns := range append(slices.Clone(lifecycleNamespaces), operandNS) {
		errs = append(errs, get(&corev1.Namespace{}, "", ns))
	}
	for _, ns := range lifecycleNamespaces {
		for _, d := range lifecycleDrinks {
			errs = append(errs, get(&drinksv1.Drink{}, ns, d.name), get(&corev1.ConfigMap{}, ns, d.name))
		}
	}
	errs = append(errs,
		get(&webappv1.Guestbook{}, "", lifecycleGuestbook),
		get(&appsv1.StatefulSet{}, operandNS, lifecycleGuestbook),
		get(&corev1.Service{}, operandNS, lifecycleGuestbook),
		get(&corev1.ConfigMap{}, operandNS, lifecycleGBConf),
		get(&operatorv1alpha1.OperatorConfig{}, "", operatorv1alpha1.SingletonName))
	pods := &corev1.PodList{}
	if err := kc.List(ctx, pods, client.InNamespace(operandNS), client.MatchingLabels{"app.kubernetes.io/instance": lifecycleGuestbook}); err != nil {
		errs = append(errs, err)
	}
	if len(pods.Items) != 2 {
		errs = append(errs, fmt.Errorf("%d pods of Guestbook %s, want 2", len(pods.Items), lifecycleGuestbook))
	}
	for i := range pods.Items {
		uids["pod "+pods.Items[i].Name] = pods.Items[i].UID
	}
	return uids, errors.Join(errs...)
}

// expectUIDs fails the test unless every object of lifecycleUIDs is there
// with the UID it had before.
func expectUIDs(ctx context.Context, t *testing.T, before map[string]types.UID, when string) {
	t.Helper()
	now, err := lifecycleUIDs(ctx)
	if err != nil {
		t.Errorf("%s: %v", when, err)
	}
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if now[k] != before[k] {
			t.Errorf("%s: %s has UID %q, had %q (deleted or recreated)", when, k, now[k], before[k])
		}
	}
	if !t.Failed() {
		fmt.Printf("e2e: %s: all %d objects kept their UIDs\n", when, len(before))
	}
}

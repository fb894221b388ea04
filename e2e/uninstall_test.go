//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/testenv"
)

const uninstallNS = "e2e-uninstall"

// uninstallAndReinstall: kubectl delete -k with Drinks present completes:
// no namespace stuck terminating, no webhook configuration or CRD left, no
// custom resource stuck on a finalizer, the Drinks' ConfigMaps collected.
// A fresh install afterwards works.
func uninstallAndReinstall() features.Feature {
	var deleteStart time.Time
	return features.New("uninstall and reinstall").WithLabel("area", "uninstall").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			var m strings.Builder
			m.WriteString("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + uninstallNS + "}\n")
			for i := range 5 {
				fmt.Fprintf(&m, "---\napiVersion: example.com/v1\nkind: Drink\nmetadata: {name: d%d, namespace: %s}\nspec: {displayName: D%d, beverage: tea}\n", i, uninstallNS, i)
			}
			if out, err := apply(cfg, m.String()); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			waitGCWatchesDrinks(t, cfg)
			for i := range 5 {
				conditionTrueWithin("drink", uninstallNS, fmt.Sprintf("d%d", i), "Ready", 30*time.Second)(ctx, t, cfg)
			}
			return ctx
		}).
		Assess("kubectl delete -k "+installedConfig()+" completes with Drinks present", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			deleteStart = time.Now()
			fmt.Printf("e2e: kubectl delete -k %s took %s\n", installedConfig(), uninstall(t, cfg).Round(time.Millisecond))
			return ctx
		}).
		Assess("nothing left behind", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// What is left, when something is: a ConfigMap created after
			// the delete began was written by a replica still running on a
			// stale cache; one created before it was missed by the garbage
			// collector.
			t.Cleanup(func() {
				if t.Failed() {
					out, _ := kubectl(cfg, "get", "configmaps", "-n", uninstallNS, "-o",
						`jsonpath={range .items[*]}{.metadata.name} created {.metadata.creationTimestamp} owner {.metadata.ownerReferences[0].uid}{"\n"}{end}`)
					t.Logf("the delete began at %s; ConfigMaps left:\n%s", deleteStart.UTC().Format(time.RFC3339), out)
				}
			})
			testenv.Eventually(t, 60*time.Second, func() string {
				var left []string
				for _, q := range [][]string{
					{"get", "namespace", operatorNS, "--ignore-not-found", "-o", "name"},
					{"get", "mutatingwebhookconfigurations,validatingwebhookconfigurations", "-o", "name"},
					{"get", "crd", "-o", "name"},
					{"get", "clusterroles,clusterrolebindings", "-o", "name"},
					{"get", "configmaps", "-n", uninstallNS, "-l", "app.kubernetes.io/managed-by=myoperator", "-o", "name"},
					{"get", "namespaces", "--field-selector", "status.phase=Terminating", "-o", "name"},
				} {
					out, err := kubectl(cfg, q...)
					if err != nil {
						return fmt.Sprintf("kubectl %v: %v: %s", q, err, out)
					}
					for _, name := range strings.Fields(out) {
						if strings.Contains(name, "myoperator") || strings.Contains(name, "example.com") || strings.Contains(name, "my.domain") ||
							strings.HasPrefix(name, "configmap/") || strings.HasPrefix(name, "namespace/") {
							left = append(left, name)
						}
					}
				}
				if len(left) > 0 {
					return "left behind: " + strings.Join(left, " ")
				}
				return ""
			})
			return ctx
		}).
		Assess("a fresh install works", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			installAndWait(ctx, t, cfg)
			conditionTrueWithin("operatorconfig", "", operatorv1alpha1.SingletonName, operatorv1alpha1.ConditionAvailable, 60*time.Second)(ctx, t, cfg)
			if out, err := apply(cfg, "apiVersion: example.com/v1beta1\nkind: Drink\nmetadata: {name: again, namespace: "+uninstallNS+"}\nspec: {name: Again, drink: tea, size: Large, sugar: 1}\n"); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			return configMapHas(uninstallNS, "again", map[string]string{"name": "Again", "drink": "tea", "size": "Large", "sugar": "1"})(ctx, t, cfg)
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cleanUp(t, cfg, "namespace", uninstallNS)
			return ctx
		}).
		Feature()
}

// waitGCWatchesDrinks returns once the garbage collector has collected the
// ConfigMap of a deleted canary Drink. It starts watching a kind only at
// its next resync after the kind appears (every 30 s): right after a
// feature that reinstalled the CRDs, the deletion of a Drink can go unseen
// and its ConfigMap is never collected, which says nothing about the
// operator. A canary the collector missed is removed by hand and tried
// again.
func waitGCWatchesDrinks(t *testing.T, cfg *envconf.Config) {
	t.Helper()
	start := time.Now()
	for attempt := 1; ; attempt++ {
		if out, err := apply(cfg, "apiVersion: example.com/v1\nkind: Drink\nmetadata: {name: gc-canary, namespace: "+uninstallNS+"}\nspec: {displayName: Canary, beverage: tea}\n"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		testenv.Eventually(t, 30*time.Second, func() string {
			if out, err := kubectl(cfg, "get", "configmap", "-n", uninstallNS, "gc-canary", "-o", "name"); err != nil {
				return "canary ConfigMap: " + out
			}
			return ""
		})
		if out, err := kubectl(cfg, "delete", "drink", "-n", uninstallNS, "gc-canary", "--wait=true"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if out, _ := kubectl(cfg, "get", "configmap", "-n", uninstallNS, "gc-canary", "--ignore-not-found", "-o", "name"); strings.TrimSpace(out) == "" {
				fmt.Printf("e2e: the garbage collector watches Drinks (canary collected, attempt %d, %s)\n", attempt, time.Since(start).Round(time.Millisecond))
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("the garbage collector collected no canary ConfigMap in %s", time.Since(start).Round(time.Second))
		}
		if out, err := kubectl(cfg, "delete", "configmap", "-n", uninstallNS, "gc-canary", "--ignore-not-found"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
}

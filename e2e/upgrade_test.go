//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/yaml"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
	"github.com/example/myoperator/test/framework/manifests"
	"github.com/example/myoperator/test/framework/testenv"
)

const (
	upgradeNS     = "e2e-upgrade"
	upgradeDrinks = 20
)

// upgradeFromPreviousRelease: Drinks stored as v1alpha1 (the CRD's only
// version, no webhooks, no authored versions) with their ConfigMaps in the
// course's layout, unlabelled. Installing the current release over it
// migrates every Drink to v1 storage, trims storedVersions to ["v1"] and
// adopts each ConfigMap in place (same UID, v1alpha1 layout kept).
func upgradeFromPreviousRelease() features.Feature {
	drinkUIDs := map[string]types.UID{}
	cmUIDs := map[string]types.UID{}
	return features.New("upgrade from v1alpha1-only storage").WithLabel("area", "prehistory").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			uninstall(t, cfg)
			installPreHistory(ctx, t, cfg, drinkUIDs, cmUIDs)
			installAndWait(ctx, t, cfg)
			return ctx
		}).
		Assess(`storedVersions == ["v1"]`, func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			testenv.Eventually(t, 2*time.Minute, func() string {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				if err := kc.Get(ctx, client.ObjectKey{Name: "drinks.example.com"}, crd); err != nil {
					return err.Error()
				}
				if got := crd.Status.StoredVersions; !slices.Equal(got, []string{"v1"}) {
					return fmt.Sprintf("storedVersions %v", got)
				}
				return ""
			})
			return ctx
		}).
		Assess("every Drink migrated in place, authored version v1alpha1, Ready", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			testenv.Eventually(t, 90*time.Second, func() string {
				list := &drinksv1.DrinkList{}
				if err := kc.List(ctx, list, client.InNamespace(upgradeNS)); err != nil {
					return err.Error()
				}
				if len(list.Items) != upgradeDrinks {
					return fmt.Sprintf("%d Drinks, want %d", len(list.Items), upgradeDrinks)
				}
				for i := range list.Items {
					d := &list.Items[i]
					if d.UID != drinkUIDs[d.Name] {
						return fmt.Sprintf("Drink %s was recreated", d.Name)
					}
					if got := d.Annotations[drinksv1.AuthoredVersionAnnotation]; got != "v1alpha1" {
						return fmt.Sprintf("Drink %s authored version %q, want v1alpha1", d.Name, got)
					}
					if !readyDrink(d) {
						return fmt.Sprintf("Drink %s not ready: %+v", d.Name, d.Status.Conditions)
					}
				}
				return ""
			})
			return ctx
		}).
		Assess("each legacy ConfigMap adopted: same UID, v1alpha1 layout, labelled, controlled by its Drink", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			testenv.Eventually(t, 60*time.Second, func() string {
				for name, uid := range cmUIDs {
					cm := &corev1.ConfigMap{}
					if err := kc.Get(ctx, client.ObjectKey{Namespace: upgradeNS, Name: name}, cm); err != nil {
						return err.Error()
					}
					if cm.UID != uid {
						return fmt.Sprintf("ConfigMap %s was recreated (UID %s, was %s)", name, cm.UID, uid)
					}
					if want := legacyData(name); !maps.Equal(cm.Data, want) {
						return fmt.Sprintf("ConfigMap %s data %v, want the v1alpha1 layout %v", name, cm.Data, want)
					}
					if cm.Labels["app.kubernetes.io/managed-by"] != "myoperator" {
						return fmt.Sprintf("ConfigMap %s not adopted: labels %v", name, cm.Labels)
					}
					if ref := metav1.GetControllerOf(cm); ref == nil || ref.UID != drinkUIDs[name] {
						return fmt.Sprintf("ConfigMap %s controller %v", name, ref)
					}
				}
				return ""
			})
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cleanUp(t, cfg, "namespace", upgradeNS)
			return ctx
		}).
		Feature()
}

// legacyData is the ConfigMap the previous release wrote for a fixture
// Drink: the original course's layout.
func legacyData(name string) map[string]string {
	return map[string]string{"name": "Old " + name, "drink": "tea"}
}

// installPreHistory installs the fixture: the Drink CRD with v1alpha1 only
// (stored as v1alpha1, no conversion webhook), Drinks written through it
// and the ConfigMaps an operator without authored versions made for them
// (owned by the Drinks, unlabelled). It records the
// UIDs.
func installPreHistory(ctx context.Context, t *testing.T, cfg *envconf.Config, drinkUIDs, cmUIDs map[string]types.UID) {
	t.Helper()
	crd, err := preHistoryDrinkCRD()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := applyServerSide(cfg, crd); err != nil {
		t.Fatalf("pre-history CRD: %v: %s", err, out)
	}
	if out, err := kubectl(cfg, "wait", "--for=condition=Established", "--timeout=30s", "crd/drinks.example.com"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var manifest strings.Builder
	manifest.WriteString("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + upgradeNS + "}\n")
	for i := range upgradeDrinks {
		name := fmt.Sprintf("old-%d", i)
		fmt.Fprintf(&manifest, "---\napiVersion: example.com/v1alpha1\nkind: Drink\nmetadata: {name: %s, namespace: %s}\nspec: {name: %q, drink: %s}\n",
			name, upgradeNS, legacyData(name)["name"], legacyData(name)["drink"])
	}
	// The API server may take a moment to serve a new CRD's resource.
	testenv.Eventually(t, 30*time.Second, func() string {
		if out, err := apply(cfg, manifest.String()); err != nil {
			return out
		}
		return ""
	})
	for i := range upgradeDrinks {
		name := fmt.Sprintf("old-%d", i)
		d := &drinksv1alpha1.Drink{}
		if err := kc.Get(ctx, client.ObjectKey{Namespace: upgradeNS, Name: name}, d); err != nil {
			t.Fatal(err)
		}
		if _, ok := d.Annotations[drinksv1.AuthoredVersionAnnotation]; ok {
			t.Fatalf("fixture Drink %s has an authored version: a webhook of the current release is still installed", name)
		}
		drinkUIDs[name] = d.UID
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: upgradeNS, Name: name, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "example.com/v1alpha1", Kind: "Drink", Name: name, UID: d.UID, Controller: new(true), BlockOwnerDeletion: new(true),
			}}},
			Data: legacyData(name),
		}
		if err := kc.Create(ctx, cm, client.FieldOwner("myoperator-previous-release")); err != nil {
			t.Fatal(err)
		}
		cmUIDs[name] = cm.UID
	}
}

// preHistoryDrinkCRD is the current Drink CRD cut down to v1alpha1 alone,
// served and stored, no conversion.
func preHistoryDrinkCRD() (string, error) {
	out, err := exec.Command("kubectl", "kustomize", filepath.Join(root, "config", "crd")).Output()
	if err != nil {
		return "", fmt.Errorf("kubectl kustomize config/crd: %w", err)
	}
	docs, err := manifests.SplitYAML(out)
	if err != nil {
		return "", err
	}
	for _, doc := range docs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(doc, crd); err != nil || crd.Name != "drinks.example.com" {
			continue
		}
		var versions []apiextensionsv1.CustomResourceDefinitionVersion
		for _, v := range crd.Spec.Versions {
			if v.Name == "v1alpha1" {
				v.Served, v.Storage, v.Deprecated, v.DeprecationWarning = true, true, false, nil
				versions = append(versions, v)
			}
		}
		crd.Spec.Versions = versions
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
		crd.Kind, crd.APIVersion = "CustomResourceDefinition", "apiextensions.k8s.io/v1"
		data, err := json.Marshal(crd)
		return string(data), err
	}
	return "", fmt.Errorf("config/crd has no drinks.example.com")
}

// applyServerSide pipes a manifest into kubectl apply --server-side, the
// way the install applies config/default.
func applyServerSide(cfg *envconf.Config, manifest string) (string, error) {
	cmd := exec.Command("kubectl", "--kubeconfig", cfg.KubeconfigFile(), "apply", "--server-side", "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// installedConfig is the kustomization the operator was installed from:
// the production config/default on the suite's cluster (kwok or real
// node), make deploy's DEPLOY_CONFIG on an existing one.
func installedConfig() string {
	if mode.created() {
		return "config/default"
	}
	if mode.deployConfig != "" {
		return mode.deployConfig
	}
	return "config/default"
}

// installAndWait installs the operator as the suite does (install) and
// waits until every replica is ready and one holds the Lease.
func installAndWait(ctx context.Context, t *testing.T, cfg *envconf.Config) {
	t.Helper()
	if _, err := install(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := waitOperatorReady(ctx, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
}

// uninstall runs kubectl delete -k on what was installed (installedConfig),
// waiting for everything to go, and waits for the operator's containers to
// stop.
func uninstall(t *testing.T, cfg *envconf.Config) time.Duration {
	t.Helper()
	start := time.Now()
	if out, err := kubectl(cfg, "delete", "-k", filepath.Join(root, installedConfig()), "--ignore-not-found", "--wait=true", "--timeout=3m"); err != nil {
		t.Fatalf("kubectl delete -k %s: %v: %s", installedConfig(), err, out)
	}
	took := time.Since(start)
	testenv.Eventually(t, 60*time.Second, func() string {
		if n, err := runningOperatorPods(context.Background()); err != nil || n > 0 {
			return fmt.Sprintf("%d operator pods still run (%v)", n, err)
		}
		return ""
	})
	return took
}

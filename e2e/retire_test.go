//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/yaml"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/test/framework/manifests"
	"github.com/example/myoperator/test/framework/testenv"
)

const (
	retireNS = "e2e-retire"
	// retireDir holds the release's files for each stage
	// (docs/VERSION-LIFECYCLE.md); the feature applies the same files.
	retireDir = "config/crd/retire-v1alpha1"
	// retirePolicy is refuse-writes' ValidatingAdmissionPolicy.
	retirePolicy = "drinks-v1alpha1-read-only"
)

// v1alpha1Layout is a v1alpha1 Drink's ConfigMap (DESIGN: the course's
// layout, kept until the owner writes the Drink through a newer version).
func v1alpha1Layout(name, drink string) map[string]string {
	return map[string]string{"name": name, "drink": drink}
}

// retireV1alpha1 walks the stages of docs/VERSION-LIFECYCLE.md on Drinks
// written through v1alpha1 (two with kubectl apply --server-side, one with
// kubectl create): writes through v1alpha1 refused with a message naming
// example.com/v1 Drink; v1alpha1 not served (404), the Drinks read and
// edited through v1beta1 and v1, their ConfigMaps intact; the managedFields
// of v1alpha1 cleaned by the leader's migration at start; v1alpha1 removed
// from the CRD and kubectl apply --server-side through v1 working; and the
// way back: v1alpha1 served again reads and writes as before.
func retireV1alpha1() features.Feature {
	applied := []string{"applied-a", "applied-b"}
	const created = "created"
	all := append(slices.Clone(applied), created)
	cmUIDs := map[string]string{}
	return features.New("retire v1alpha1").WithLabel("area", "retire").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if out, err := kubectl(cfg, "create", "namespace", retireNS); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			for _, name := range applied {
				if out, err := kubectlStdin(cfg, v1alpha1Drink(name, "Old "+name, "tea"), "apply", "--server-side", "-f", "-"); err != nil {
					t.Fatalf("kubectl apply --server-side %s: %v\n%s", name, err, out)
				}
			}
			if out, err := kubectlStdin(cfg, v1alpha1Drink(created, "Plain", "cocoa"), "create", "-f", "-"); err != nil {
				t.Fatalf("kubectl create %s: %v\n%s", created, err, out)
			}
			return ctx
		}).
		Assess("written through v1alpha1: Ready, v1alpha1 layout, managedFields name v1alpha1", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			for _, name := range all {
				ctx = conditionTrueWithin("drink", retireNS, name, "Ready", settle)(ctx, t, cfg)
			}
			ctx = configMapHas(retireNS, applied[0], v1alpha1Layout("Old "+applied[0], "tea"))(ctx, t, cfg)
			ctx = configMapHas(retireNS, applied[1], v1alpha1Layout("Old "+applied[1], "tea"))(ctx, t, cfg)
			ctx = configMapHas(retireNS, created, v1alpha1Layout("Plain", "cocoa"))(ctx, t, cfg)
			for _, name := range all {
				versions := entryVersions(ctx, t, name)
				t.Logf("%s: managedFields %v", name, versions)
				if !namesV1alpha1(versions) {
					t.Errorf("%s: managedFields %v name no example.com/v1alpha1", name, versions)
				}
				out, err := kubectl(cfg, "get", "configmap", "-n", retireNS, name, "-o", "jsonpath={.metadata.uid}")
				if err != nil {
					t.Fatalf("%v: %s", err, out)
				}
				cmUIDs[name] = out
			}
			return ctx
		}).
		Assess("refuse writes: a v1alpha1 write is refused naming example.com/v1, reads still work", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if out, err := kubectl(cfg, "apply", "--server-side", "-k", filepath.Join(root, retireDir, "refuse-writes")); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			start := time.Now()
			var refusal string
			// Policies load asynchronously: probe with a server-side dry run.
			testenv.Eventually(t, settle, func() string {
				out, err := kubectlStdin(cfg, v1alpha1Drink(created, "Plain", "milk"), "apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", "-")
				if err == nil {
					return "a v1alpha1 write is still accepted"
				}
				refusal = out
				return ""
			})
			t.Logf("refused %s after the policy was applied: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(refusal))
			out, err := kubectlStdin(cfg, v1alpha1Drink(created, "Plain", "milk"), "apply", "--server-side", "--force-conflicts", "-f", "-")
			if err == nil || !strings.Contains(out, "example.com/v1 Drink") || !strings.Contains(out, retirePolicy) {
				t.Errorf("v1alpha1 write: %v: %q, want a refusal by %s naming example.com/v1 Drink", err, out, retirePolicy)
			}
			stdout, stderr, err := kubectlOut(cfg, "get", "drinks.v1alpha1.example.com", "-n", retireNS, created, "-o", "jsonpath={.spec.drink}")
			if err != nil || stdout != "cocoa" || !strings.Contains(stderr, "example.com/v1alpha1 Drink is deprecated") {
				t.Errorf("v1alpha1 read: %q (%v), warnings %q; want cocoa with the deprecation warning", stdout, err, stderr)
			}
			t.Logf("v1alpha1 read still works: %s", strings.TrimSpace(stderr))
			return ctx
		}).
		Assess("served: false: v1alpha1 gives 404; Drinks read and edit through v1beta1 and v1; ConfigMaps intact", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			patchCRD(t, cfg, "unserve")
			start := time.Now()
			raw := "/apis/example.com/v1alpha1/namespaces/" + retireNS + "/drinks/" + created
			testenv.Eventually(t, settle, func() string {
				out, err := kubectl(cfg, "get", "--raw", raw)
				if err == nil || !strings.Contains(out, "NotFound") {
					return fmt.Sprintf("GET %s: %v %s", raw, err, out)
				}
				t.Logf("GET %s %s after served: false: %s", raw, time.Since(start).Round(time.Millisecond), strings.TrimSpace(out))
				return ""
			})
			// kubectl says 404 while its discovery cache still lists
			// v1alpha1, and no matches for the kind once it does not.
			out, err := kubectlStdin(cfg, v1alpha1Drink(created, "Plain", "milk"), "apply", "--server-side", "--force-conflicts", "-f", "-")
			if err == nil || !strings.Contains(out, "NotFound") && !strings.Contains(out, "no matches for kind") {
				t.Errorf("kubectl apply of a v1alpha1 manifest: %v: %q, want NotFound or no matches for kind", err, out)
			}
			t.Logf("kubectl apply of a v1alpha1 manifest, kubectl's discovery cache from before: %s", strings.TrimSpace(out))
			out, err = kubectlStdin(cfg, v1alpha1Drink(created, "Plain", "milk"), "apply", "--server-side", "--force-conflicts", "--cache-dir", t.TempDir(), "-f", "-")
			if err == nil || !strings.Contains(out, `no matches for kind "Drink" in version "example.com/v1alpha1"`) {
				t.Errorf("kubectl apply of a v1alpha1 manifest: %v: %q, want no matches for kind Drink in version example.com/v1alpha1", err, out)
			}
			t.Logf("kubectl apply of a v1alpha1 manifest, fresh discovery: %s", strings.TrimSpace(out))
			for _, v := range []string{"v1beta1", "v1"} {
				out, err := kubectl(cfg, "get", "drinks."+v+".example.com", "-n", retireNS, "-o", "jsonpath={.items[*].metadata.name}")
				if err != nil || out != strings.Join([]string{applied[0], applied[1], created}, " ") {
					t.Errorf("Drinks through %s: %q (%v)", v, out, err)
				}
			}
			// Moved to v1 by its owner, with the same field manager: the
			// layout becomes v1's, and its apply entry now names v1.
			if out, err := kubectlStdin(cfg, v1Drink(applied[0], "Old "+applied[0], "tea", 2), "apply", "--server-side", "-f", "-"); err != nil {
				t.Fatalf("apply through v1: %v\n%s", err, out)
			}
			// Edited through v1beta1 by another manager: v1beta1's layout;
			// the v1alpha1 apply entry stays.
			if out, err := kubectl(cfg, "patch", "drinks.v1beta1.example.com", "-n", retireNS, applied[1], "--type=merge", "-p", `{"spec":{"sugar":3,"size":"Large"}}`); err != nil {
				t.Fatalf("patch through v1beta1: %v\n%s", err, out)
			}
			ctx = configMapHas(retireNS, applied[0], map[string]string{
				"displayName": "Old " + applied[0], "beverage": "tea", "size": "Small", "sugarCubes": "2", "extras": ""})(ctx, t, cfg)
			ctx = configMapHas(retireNS, applied[1], map[string]string{"name": "Old " + applied[1], "drink": "tea", "size": "Large", "sugar": "3"})(ctx, t, cfg)
			ctx = configMapHas(retireNS, created, v1alpha1Layout("Plain", "cocoa"))(ctx, t, cfg)
			for _, name := range all {
				ctx = conditionTrueWithin("drink", retireNS, name, "Ready", settle)(ctx, t, cfg)
			}
			checkSameConfigMaps(t, cfg, cmUIDs)
			return ctx
		}).
		Assess("the leader's migration at start removes v1alpha1's managedFields entries", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			for _, name := range all {
				t.Logf("%s: managedFields before %v", name, entryVersions(ctx, t, name))
			}
			lease, err := leaseOf(ctx)
			if err != nil || holderPod(lease) == "" {
				t.Fatalf("no leader: %v", err)
			}
			start := time.Now()
			if err := killLeader(cfg, holderPod(lease)); err != nil {
				t.Fatalf("kill %s: %v", holderPod(lease), err)
			}
			leader, acquired := waitNewLeader(ctx, t, *lease.Spec.HolderIdentity)
			testenv.Eventually(t, 2*time.Minute, func() string {
				for _, name := range all {
					if v := entryVersions(ctx, t, name); namesV1alpha1(v) {
						return fmt.Sprintf("%s: managedFields still name v1alpha1: %v", name, v)
					}
				}
				return ""
			})
			t.Logf("%s (%s) killed; %s took the Lease after %s; managedFields clean %s after the kill",
				killMethod(), holderPod(lease), leader, acquired.Sub(start).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
			for _, name := range all {
				t.Logf("%s: managedFields after %v", name, entryVersions(ctx, t, name))
			}
			if err := waitOperatorReady(ctx, 2*time.Minute); err != nil {
				t.Error(err)
			}
			return ctx
		}).
		Assess("v1alpha1 removed from the CRD: kubectl apply --server-side through v1 works", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			out, err := kubectl(cfg, "get", "crd", "drinks.example.com", "-o", "jsonpath={.status.storedVersions}")
			if err != nil || out != `["v1"]` {
				t.Fatalf("storedVersions %s (%v), want [\"v1\"] before removing a version", out, err)
			}
			patchCRD(t, cfg, "remove")
			for i, name := range all {
				testenv.Eventually(t, settle, func() string {
					out, err := kubectlStdin(cfg, v1Drink(name, "Moved "+name, "tea", int32(i)), "apply", "--server-side", "--force-conflicts", "-f", "-")
					if err != nil {
						return fmt.Sprintf("kubectl apply --server-side %s through v1: %v: %s", name, err, out)
					}
					return ""
				})
				ctx = configMapHas(retireNS, name, map[string]string{
					"displayName": "Moved " + name, "beverage": "tea", "size": "Small", "sugarCubes": fmt.Sprint(i), "extras": ""})(ctx, t, cfg)
			}
			t.Logf("kubectl apply --server-side through v1 of %v works with v1alpha1 removed", all)
			checkSameConfigMaps(t, cfg, cmUIDs)
			return ctx
		}).
		Assess("the way back: v1alpha1 served again reads and writes as before", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			restoreV1alpha1(t, cfg)
			testenv.Eventually(t, settle, func() string {
				out, err := kubectlStdin(cfg, v1alpha1Drink(created, "Back", "juice"), "apply", "--server-side", "--force-conflicts", "-f", "-")
				if err != nil {
					return fmt.Sprintf("v1alpha1 write after the restore: %v: %s", err, out)
				}
				return ""
			})
			ctx = configMapHas(retireNS, created, v1alpha1Layout("Back", "juice"))(ctx, t, cfg)
			ctx = conditionTrueWithin("drink", retireNS, created, "Ready", settle)(ctx, t, cfg)
			stdout, stderr, err := kubectlOut(cfg, "get", "drinks.v1alpha1.example.com", "-n", retireNS, "-o", "jsonpath={.items[*].metadata.name}")
			if err != nil || stdout != strings.Join(all, " ") || !strings.Contains(stderr, "deprecated") {
				t.Errorf("v1alpha1 list after the restore: %q (%v), warnings %q", stdout, err, stderr)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			restoreV1alpha1(t, cfg)
			cleanUp(t, cfg, "namespace", retireNS)
			return ctx
		}).
		Feature()
}

func v1alpha1Drink(name, displayName, drink string) string {
	return fmt.Sprintf("apiVersion: example.com/v1alpha1\nkind: Drink\nmetadata: {name: %s, namespace: %s}\nspec: {name: %q, drink: %s}\n",
		name, retireNS, displayName, drink)
}

func v1Drink(name, displayName, beverage string, sugar int32) string {
	return fmt.Sprintf("apiVersion: example.com/v1\nkind: Drink\nmetadata: {name: %s, namespace: %s}\nspec: {displayName: %q, beverage: %s, size: Small, sugarCubes: %d}\n",
		name, retireNS, displayName, beverage, sugar)
}

// patchCRD applies one stage's JSON patch (retireDir/<stage>/patch.yaml)
// to the live Drink CRD, as docs/VERSION-LIFECYCLE.md shows.
func patchCRD(t *testing.T, cfg *envconf.Config, stage string) {
	t.Helper()
	out, err := kubectl(cfg, "patch", "crd", "drinks.example.com", "--type=json", "--patch-file", filepath.Join(root, retireDir, stage, "patch.yaml"))
	if err != nil {
		t.Fatalf("kubectl patch crd (%s): %v: %s", stage, err, out)
	}
	t.Logf("CRD %s: %s", stage, strings.TrimSpace(out))
}

// restoreV1alpha1 is the way back of every stage: the install's own Drink
// CRD applied again (v1alpha1 listed and served) and the policy deleted.
// It leaves the cluster as the other features expect, whatever stage the
// feature stopped at.
func restoreV1alpha1(t *testing.T, cfg *envconf.Config) {
	t.Helper()
	crd, err := installedDrinkCRD()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := kubectlStdin(cfg, string(crd), "apply", "--server-side", "--force-conflicts", "-f", "-"); err != nil {
		t.Errorf("applying the Drink CRD again: %v: %s", err, out)
	}
	if out, err := kubectl(cfg, "delete", "--ignore-not-found", "-k", filepath.Join(root, retireDir, "refuse-writes")); err != nil {
		t.Errorf("deleting the policy: %v: %s", err, out)
	}
	testenv.Eventually(t, settle, func() string {
		out, err := kubectl(cfg, "get", "--raw", "/apis/example.com/v1alpha1")
		if err != nil {
			return "v1alpha1 not served yet: " + out
		}
		return ""
	})
}

// installedDrinkCRD is the Drink CRD as the suite's install rendered it.
func installedDrinkCRD() ([]byte, error) {
	docs, err := manifests.Kustomize(installedConfig())
	if err != nil {
		return nil, err
	}
	for _, doc := range docs {
		var head struct {
			Kind     string            `json:"kind"`
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &head); err == nil && head.Kind == "CustomResourceDefinition" && head.Metadata.Name == "drinks.example.com" {
			return doc, nil
		}
	}
	return nil, fmt.Errorf("%s renders no Drink CRD", installedConfig())
}

// namesV1alpha1 tells whether one of entries (entryVersions) names
// example.com/v1alpha1.
func namesV1alpha1(entries []string) bool {
	return slices.ContainsFunc(entries, func(e string) bool { return strings.HasSuffix(e, "@example.com/v1alpha1") })
}

// entryVersions lists the Drink's managedFields entries as
// manager@apiVersion.
func entryVersions(ctx context.Context, t *testing.T, name string) []string {
	t.Helper()
	d := &metav1.PartialObjectMetadata{}
	d.SetGroupVersionKind(drinksv1.GroupVersion.WithKind("Drink"))
	if err := kc.Get(ctx, client.ObjectKey{Namespace: retireNS, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	var v []string
	for _, e := range d.ManagedFields {
		v = append(v, e.Manager+"@"+e.APIVersion)
	}
	return v
}

// checkSameConfigMaps: each Drink's ConfigMap is the one it had at the
// start (same UID): no stage recreated it.
func checkSameConfigMaps(t *testing.T, cfg *envconf.Config, uids map[string]string) {
	t.Helper()
	for name, uid := range uids {
		out, err := kubectl(cfg, "get", "configmap", "-n", retireNS, name, "-o", "jsonpath={.metadata.uid}")
		if err != nil || out != uid {
			t.Errorf("ConfigMap %s: uid %q (%v), want %s (the same object)", name, out, err, uid)
		}
	}
}

// kubectlStdin runs kubectl with stdin and returns both outputs together.
func kubectlStdin(cfg *envconf.Config, stdin string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", cfg.KubeconfigFile()}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// kubectlOut runs kubectl and returns its outputs apart (warnings go to
// standard error).
func kubectlOut(cfg *envconf.Config, args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", cfg.KubeconfigFile()}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

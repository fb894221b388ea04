package app_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/app"
	"github.com/example/myoperator/internal/migrate"
	"github.com/example/myoperator/test/framework/testenv"
)

// retireNS is where the test's Drinks live.
const retireNS = "default"

// convertError is what the API server answers a server-side apply of a
// Drink whose managedFields name a version the CRD no longer lists
// (kubernetes/kubernetes#111937).
const convertError = "request to convert CR to an invalid group/version: example.com/v1alpha1"

// TestRetireV1alpha1ManagedFields: Drinks applied server-side through
// v1alpha1 carry managedFields entries of example.com/v1alpha1. With
// v1alpha1 no longer served, applies through v1 still work; once v1alpha1
// is removed from the CRD, every apply of those Drinks fails until the
// migration removes the entries of versions not served. Then applies work
// again, a Drink left with no entry gets the one seed entry, and a Drink
// that had nothing to clean was not written.
func TestRetireV1alpha1ManagedFields(t *testing.T) {
	env, cfg, c := testenv.Start(t, testenv.Options{Webhooks: true})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := testenv.StartManager(ctx, env, cfg, app.InProcess(app.Options{Namespace: operatorNS})); err != nil {
		t.Fatal(err)
	}
	const ns = retireNS
	// applied-only keeps only its v1alpha1 entry: the cleanup leaves it
	// the seed entry.
	legacy := []string{"applied-1", "applied-2", "applied-3", "applied-only"}
	for _, name := range legacy {
		if err := applyDrink(ctx, c, "v1alpha1", name, map[string]any{"name": "Old " + name, "drink": "tea"}); err != nil {
			t.Fatalf("applying %s through v1alpha1: %v", name, err)
		}
	}
	const current = "applied-v1"
	if err := applyDrink(ctx, c, "v1", current, map[string]any{"displayName": "New", "beverage": "coffee"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range append(slices.Clone(legacy), current) {
		waitReconciled(t, c, ns, name)
	}
	for _, name := range legacy {
		if got := entryVersions(t, c, ns, name); !slices.Contains(got, "example.com/v1alpha1") {
			t.Fatalf("%s: managedFields name %v, want example.com/v1alpha1 among them", name, got)
		}
	}

	keepOnlyV1alpha1Entries(t, c, ns, legacy[3])

	updateCRD(t, c, func(crd *apiextensionsv1.CustomResourceDefinition) { setServed(crd, "v1alpha1", false) })
	if err := applyDrink(ctx, c, "v1", legacy[0], map[string]any{"displayName": "Old " + legacy[0], "beverage": "tea"}); err != nil {
		t.Errorf("apply through v1 with v1alpha1 listed but not served: %v", err)
	}

	updateCRD(t, c, func(crd *apiextensionsv1.CustomResourceDefinition) { removeVersion(crd, "v1alpha1") })
	testenv.Eventually(t, 30*time.Second, func() string {
		err := applyDrink(ctx, c, "v1", legacy[1], map[string]any{"displayName": "Old " + legacy[1], "beverage": "tea"})
		if err == nil || !strings.Contains(err.Error(), convertError) {
			return "apply through v1 after removing v1alpha1, without cleanup: " + errString(err) + "; want " + convertError
		}
		t.Logf("without cleanup, apply through v1 fails: %v", err)
		return ""
	})

	// The same through kubectl, as a user meets it.
	kubeconfig, remove, err := testenv.WriteKubeconfig(env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)
	manifest := "apiVersion: example.com/v1\nkind: Drink\nmetadata: {name: " + legacy[1] + ", namespace: " + ns + "}\nspec: {displayName: Moved, beverage: tea}\n"
	cmd := exec.Command("kubectl", "--kubeconfig", kubeconfig, "apply", "--server-side", "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), convertError) {
		t.Errorf("kubectl apply --server-side through v1 without cleanup: %v: %s; want %s", err, out, convertError)
	}
	t.Logf("without cleanup, kubectl apply --server-side through v1: %s", strings.TrimSpace(string(out)))

	// A write other than an apply still works. From Kubernetes 1.37 it
	// leaves the entry in place, and only the cleanup removes it; before,
	// the API server, failing to update the managedFields, drops every
	// entry of the Drink (serverKeepsEntries).
	patched := &drinksv1.Drink{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: legacy[2]}, patched); err != nil {
		t.Fatal(err)
	}
	p := client.MergeFrom(patched.DeepCopy())
	metav1.SetMetaDataLabel(&patched.ObjectMeta, "touched", "yes")
	if err := c.Patch(ctx, patched, p); err != nil {
		t.Errorf("merge patch through v1 without cleanup: %v", err)
	}
	got := entryVersions(t, c, ns, legacy[2])
	switch keeps := serverKeepsEntries(t, cfg); {
	case keeps && !slices.Contains(got, "example.com/v1alpha1"):
		t.Errorf("%s: managedFields %v after a merge patch, want the example.com/v1alpha1 entry kept", legacy[2], got)
	case !keeps && len(got) != 0:
		t.Errorf("%s: managedFields %v after a merge patch, want none: before 1.37 the API server drops them all", legacy[2], got)
	case !keeps:
		t.Logf("%s: a merge patch through v1 dropped every managedFields entry, as the API server does before 1.37", legacy[2])
	}

	before := resourceVersion(t, c, ns, current)
	m := &migrate.Migrator{Client: c, Log: testr.New(t)}
	if err := m.Run(ctx); err != nil {
		t.Fatalf("migration with cleanup: %v", err)
	}
	only := &metav1.PartialObjectMetadata{}
	only.SetGroupVersionKind(drinksv1.GroupVersion.WithKind("Drink"))
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: legacy[3]}, only); err != nil {
		t.Fatal(err)
	}
	if e := only.ManagedFields; len(e) != 1 || e[0].Manager != "kubectl" || e[0].Operation != metav1.ManagedFieldsOperationApply ||
		e[0].APIVersion != "example.com/v1" || string(e[0].FieldsV1.GetRawBytes()) != `{"f:metadata":{"f:name":{}}}` {
		t.Errorf("%s: managedFields after cleanup %+v, want the one seed entry (kubectl, Apply, example.com/v1, metadata.name)", legacy[3], e)
	}
	for _, name := range legacy {
		if got := entryVersions(t, c, ns, name); slices.Contains(got, "example.com/v1alpha1") {
			t.Errorf("%s: managedFields still name example.com/v1alpha1 after cleanup: %v", name, got)
		}
		if got := authoredVersion(t, c, ns, name); got != "v1alpha1" {
			t.Errorf("%s: authored version %q after cleanup, want v1alpha1 (the spec did not change)", name, got)
		}
		if err := applyDrink(ctx, c, "v1", name, map[string]any{"displayName": "Moved " + name, "beverage": "tea"}); err != nil {
			t.Errorf("%s: apply through v1 after cleanup: %v", name, err)
		}
	}
	// The seed goes with the first apply of its manager: no inferred
	// entry ("before-first-apply") shares the fields.
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: legacy[3]}, only); err != nil {
		t.Fatal(err)
	}
	for _, e := range only.ManagedFields {
		if e.Manager == "before-first-apply" || e.Manager == "kubectl" && strings.Contains(string(e.FieldsV1.GetRawBytes()), "f:metadata") {
			t.Errorf("%s: managedFields after an apply through v1 %+v, want the seed gone and no inferred entry", legacy[3], only.ManagedFields)
		}
	}
	if after := resourceVersion(t, c, ns, current); after != before {
		t.Errorf("%s had nothing to clean but was written: resourceVersion %s -> %s", current, before, after)
	}
	if err := m.Run(ctx); err != nil {
		t.Fatalf("second run: %v", err)
	}
}

// keepOnlyV1alpha1Entries leaves the Drink only its managedFields entries
// of example.com/v1alpha1, as if nobody had written it through another
// version (the reconciler's status entry goes).
func keepOnlyV1alpha1Entries(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	d := &metav1.PartialObjectMetadata{}
	d.SetGroupVersionKind(drinksv1.GroupVersion.WithKind("Drink"))
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	entries := slices.DeleteFunc(d.ManagedFields, func(e metav1.ManagedFieldsEntry) bool { return e.APIVersion != "example.com/v1alpha1" })
	patch, err := json.Marshal([]map[string]any{{"op": "replace", "path": "/metadata/managedFields", "value": entries}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Patch(context.Background(), d, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		t.Fatal(err)
	}
	if got := entryVersions(t, c, ns, name); !slices.Equal(got, []string{"example.com/v1alpha1"}) {
		t.Fatalf("%s: managedFields %v, want example.com/v1alpha1 alone", name, got)
	}
}

// applyDrink applies spec to Drink retireNS/name through version, server-side,
// as kubectl apply --server-side does.
func applyDrink(ctx context.Context, c client.Client, version, name string, spec map[string]any) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/" + version, "kind": "Drink",
		"metadata": map[string]any{"namespace": retireNS, "name": name},
		"spec":     spec,
	}}
	return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("kubectl"), client.ForceOwnership)
}

// waitReconciled waits until the Drink's status is at its generation, so
// that the reconciler's status write is behind us.
func waitReconciled(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() string {
		d := &drinksv1.Drink{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return err.Error()
		}
		if d.Status.ObservedGeneration != d.Generation {
			return name + " not reconciled yet"
		}
		return ""
	})
}

// serverKeepsEntries tells whether the API server keeps an object's
// managedFields when a write other than an apply cannot update them (an
// entry names a version the CRD no longer lists): from 1.37,
// k8s.io/apimachinery's FieldManager.UpdateNoErrors restores the stored
// object's entries; before, it removes them all.
func serverKeepsEntries(t *testing.T, cfg *rest.Config) bool {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	minor, err := strconv.Atoi(strings.TrimSuffix(v.Minor, "+"))
	if err != nil || v.Major != "1" {
		t.Fatalf("API server version %s.%s: %v", v.Major, v.Minor, err)
	}
	return minor >= 37
}

func entryVersions(t *testing.T, c client.Client, ns, name string) []string {
	t.Helper()
	d := &metav1.PartialObjectMetadata{}
	d.SetGroupVersionKind(drinksv1.GroupVersion.WithKind("Drink"))
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	var v []string
	for _, e := range d.ManagedFields {
		v = append(v, e.APIVersion)
	}
	return v
}

func authoredVersion(t *testing.T, c client.Client, ns, name string) string {
	t.Helper()
	d := &drinksv1.Drink{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	return d.Annotations[drinksv1.AuthoredVersionAnnotation]
}

func resourceVersion(t *testing.T, c client.Client, ns, name string) string {
	t.Helper()
	d := &drinksv1.Drink{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	return d.ResourceVersion
}

func setServed(crd *apiextensionsv1.CustomResourceDefinition, version string, served bool) {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == version {
			crd.Spec.Versions[i].Served = served
		}
	}
}

func removeVersion(crd *apiextensionsv1.CustomResourceDefinition, version string) {
	crd.Spec.Versions = slices.DeleteFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
		return v.Name == version
	})
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

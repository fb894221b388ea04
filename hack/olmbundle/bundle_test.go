package olmbundle_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/hack/olmbundle"
	"github.com/example/myoperator/test/framework/manifests"
	"github.com/example/myoperator/test/framework/testutil"
)

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run make bundle)", err)
	}
	m := map[string]any{}
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// TestBundleMatchesConfig parses the committed bundle/ and cross-checks it
// against config/: every CRD and version owned, every webhook declared
// (conversion included), the same image, Deployment and RBAC (less what
// OLM does itself), and its place in the upgrade graph.
func TestBundleMatchesConfig(t *testing.T) {
	root, err := testutil.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "bundle")
	csv := &unstructured.Unstructured{Object: readYAML(t, filepath.Join(dir, "manifests", olmbundle.PackageName+".clusterserviceversion.yaml"))}
	if csv.GetKind() != "ClusterServiceVersion" || csv.GetAPIVersion() != "operators.coreos.com/v1alpha1" {
		t.Fatalf("not a ClusterServiceVersion: %s %s", csv.GetAPIVersion(), csv.GetKind())
	}
	all, err := manifests.Render("config/default")
	if err != nil {
		t.Fatal(err)
	}

	// CRDs: a manifest each, every version owned.
	owned, _, _ := unstructured.NestedSlice(csv.Object, "spec", "customresourcedefinitions", "owned")
	has := map[string]bool{}
	for _, o := range owned {
		om := o.(map[string]any)
		has[om["name"].(string)+"/"+om["version"].(string)] = true
	}
	crds := manifests.OfKind(all, "CustomResourceDefinition")
	if len(crds) != 3 {
		t.Fatalf("config/default has %d CRDs", len(crds))
	}
	for _, crd := range crds {
		if _, err := os.Stat(filepath.Join(dir, "manifests", crd.GetName()+".yaml")); err != nil {
			t.Errorf("CRD %s not in the bundle: %v", crd.GetName(), err)
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			name := v.(map[string]any)["name"].(string)
			if !has[crd.GetName()+"/"+name] {
				t.Errorf("CSV does not own %s %s", crd.GetName(), name)
			}
		}
	}

	// Webhooks: each admission webhook with its path, rules and policy; and
	// the Drink conversion webhook.
	defs, _, _ := unstructured.NestedSlice(csv.Object, "spec", "webhookdefinitions")
	byName := map[string]map[string]any{}
	for _, d := range defs {
		dm := d.(map[string]any)
		byName[dm["generateName"].(string)] = dm
	}
	count := 0
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		for _, cfg := range manifests.OfKind(all, kind) {
			hooks, _, _ := unstructured.NestedSlice(cfg.Object, "webhooks")
			for _, h := range hooks {
				count++
				hm := h.(map[string]any)
				d, ok := byName[hm["name"].(string)]
				if !ok {
					t.Errorf("webhook %s not declared in the CSV", hm["name"])
					continue
				}
				path, _, _ := unstructured.NestedString(hm, "clientConfig", "service", "path")
				if d["webhookPath"] != path || !reflect.DeepEqual(d["rules"], hm["rules"]) ||
					d["failurePolicy"] != hm["failurePolicy"] || d["sideEffects"] != hm["sideEffects"] {
					t.Errorf("webhook %s differs from config/webhook: %v vs %v", hm["name"], d, hm)
				}
			}
		}
	}
	// Drink and Guestbook mutate; Drink, Guestbook and OperatorConfig
	// validate (the OperatorConfig has no defaulting webhook: its spec
	// holds only what users chose).
	if count != 5 {
		t.Errorf("config/webhook has %d webhooks, want 5", count)
	}
	conv, ok := byName["cdrink.example.com"]
	if !ok || conv["type"] != "ConversionWebhook" || !reflect.DeepEqual(conv["conversionCRDs"], []any{"drinks.example.com"}) || conv["webhookPath"] != "/convert" {
		t.Errorf("no conversion webhook for drinks.example.com: %v", conv)
	}

	// Deployment and image: config/default's, with OLM providing the
	// certificate.
	deps, _, _ := unstructured.NestedSlice(csv.Object, "spec", "install", "spec", "deployments")
	if len(deps) != 1 {
		t.Fatalf("CSV has %d deployments", len(deps))
	}
	got, _, _ := unstructured.NestedMap(deps[0].(map[string]any), "spec")
	want, _, _ := unstructured.NestedMap(manifests.OfKind(all, "Deployment")[0].Object, "spec")
	gotContainers, _, _ := unstructured.NestedSlice(got, "template", "spec", "containers")
	wantContainers, _, _ := unstructured.NestedSlice(want, "template", "spec", "containers")
	for i := range wantContainers {
		g, w := gotContainers[i].(map[string]any), wantContainers[i].(map[string]any)
		if g["image"] != w["image"] {
			t.Errorf("container %s image %v, config/ has %v", w["name"], g["image"], w["image"])
		}
		if w["name"] == "manager" {
			args := g["args"].([]any)
			n := len(args) - len(olmbundle.OLMManagerArgs)
			if n < 0 || !reflect.DeepEqual(args[n:], toAnySlice(olmbundle.OLMManagerArgs)) {
				t.Errorf("manager args %v do not end with %v: OLM provides and mounts the certificate", args, olmbundle.OLMManagerArgs)
				n = len(args)
			}
			g["args"] = args[:n]
		}
	}
	if err := unstructured.SetNestedSlice(got, gotContainers, "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the CSV's Deployment spec differs from config/default's")
	}
	if img := csv.GetAnnotations()["containerImage"]; img != wantContainers[0].(map[string]any)["image"] {
		t.Errorf("containerImage %s differs from the Deployment's", img)
	}
	// relatedImages: the manager's image and the Guestbook's default, as
	// config/default names them, so that a mirror copies both.
	related, _, _ := unstructured.NestedSlice(csv.Object, "spec", "relatedImages")
	wantRelated := []any{
		map[string]any{"name": "manager", "image": wantContainers[0].(map[string]any)["image"]},
		map[string]any{"name": "guestbook", "image": operatorv1alpha1.DefaultGuestbookImage},
	}
	if !reflect.DeepEqual(related, wantRelated) {
		t.Errorf("relatedImages %v, want %v", related, wantRelated)
	}

	// RBAC: the same rules.
	cp, _, _ := unstructured.NestedSlice(csv.Object, "spec", "install", "spec", "clusterPermissions")
	p, _, _ := unstructured.NestedSlice(csv.Object, "spec", "install", "spec", "permissions")
	var clusterRules, nsRules []any
	for _, r := range manifests.OfKind(all, "ClusterRole") {
		if r.GetName() == "myoperator-manager-role" {
			clusterRules, _, _ = unstructured.NestedSlice(r.Object, "rules")
		}
	}
	nsRules, _, _ = unstructured.NestedSlice(manifests.OfKind(all, "Role")[0].Object, "rules")
	// Without the certificate rotator's writes: OLM injects the CA.
	if len(cp) != 1 || !reflect.DeepEqual(cp[0].(map[string]any)["rules"], olmbundle.WithoutCertRights(clusterRules)) {
		t.Errorf("clusterPermissions differ from config/rbac's ClusterRole without the certificate rotator's writes")
	}
	if len(p) != 1 || !reflect.DeepEqual(p[0].(map[string]any)["rules"], nsRules) {
		t.Errorf("permissions differ from config/rbac's Role")
	}

	// Version: the newest release of RELEASES.md, upgrading from the newest
	// released bundle older than it.
	v, err := olmbundle.CurrentVersion(filepath.Join(root, "RELEASES.md"))
	if err != nil {
		t.Fatal(err)
	}
	released, err := olmbundle.Released(filepath.Join(dir, olmbundle.ReleasesDir))
	if err != nil {
		t.Fatal(err)
	}
	g := olmbundle.Upgrade(released, v)
	replaces, _, _ := unstructured.NestedString(csv.Object, "spec", "replaces")
	version, _, _ := unstructured.NestedString(csv.Object, "spec", "version")
	if csv.GetName() != v.CSVName() || version != v.String() || replaces != g.Replaces() || csv.GetAnnotations()["olm.skipRange"] != g.SkipRange() {
		t.Errorf("CSV %s version %s replaces %q skipRange %q, want %s %s %q %q", csv.GetName(), version, replaces,
			csv.GetAnnotations()["olm.skipRange"], v.CSVName(), v, g.Replaces(), g.SkipRange())
	}

	// Metadata and bundle.Dockerfile.
	ann := readYAML(t, filepath.Join(dir, "metadata", "annotations.yaml"))["annotations"].(map[string]any)
	df, err := os.ReadFile(filepath.Join(root, "bundle.Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range olmbundle.Annotations {
		if ann[a[0]] != a[1] {
			t.Errorf("annotations.yaml %s = %v, want %s", a[0], ann[a[0]], a[1])
		}
		if !strings.Contains(string(df), "LABEL "+a[0]+"="+a[1]) {
			t.Errorf("bundle.Dockerfile lacks label %s", a[0])
		}
	}
	if !slices.ContainsFunc(strings.Split(string(df), "\n"), func(l string) bool { return l == "COPY bundle/manifests /manifests/" }) {
		t.Errorf("bundle.Dockerfile does not copy the manifests")
	}
}

func toAnySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

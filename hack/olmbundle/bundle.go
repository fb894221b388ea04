package olmbundle

import (
	_ "embed"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/example/myoperator/test/framework/manifests"
)

// Package and channel of the bundle.
const (
	PackageName    = "myoperator"
	Channel        = "alpha"
	DeploymentName = "myoperator-controller-manager"
	ServiceAccount = "myoperator-controller-manager"
)

// Annotations are the bundle's metadata, in metadata/annotations.yaml and
// as labels of bundle.Dockerfile.
var Annotations = [][2]string{
	{"operators.operatorframework.io.bundle.mediatype.v1", "registry+v1"},
	{"operators.operatorframework.io.bundle.manifests.v1", "manifests/"},
	{"operators.operatorframework.io.bundle.metadata.v1", "metadata/"},
	{"operators.operatorframework.io.bundle.package.v1", PackageName},
	{"operators.operatorframework.io.bundle.channels.v1", Channel},
	{"operators.operatorframework.io.bundle.channel.default.v1", Channel},
}

// MinKubeVersion is the oldest Kubernetes the CSV claims
// (spec.minKubeVersion): the minor of the Makefile's KUBE_OLDEST_VERSION,
// on which make test-k8s-oldest runs every envtest suite
// (TestMinKubeVersionIsTested). Before 1.33 the API server checks CEL rules
// on status writes without ratcheting, so a Drink stored before a rule
// existed could never have its status written.
const MinKubeVersion = "1.33.0"

// Options say which bundle to write.
type Options struct {
	// Graph is the bundle's version and the release it upgrades from.
	Graph Graph
	// Dockerfile also writes bundle.Dockerfile beside dir (for bundle/
	// only: it copies bundle/manifests and bundle/metadata).
	Dockerfile bool
}

// Generate writes the bundle into dir/manifests and dir/metadata (and,
// when asked, the bundle.Dockerfile beside dir). It replaces only those two
// subdirectories: bundle/ also holds the frozen bundle/releases.
func Generate(dir string, o Options) error {
	all, err := manifests.Render("config/default")
	if err != nil {
		return err
	}
	bases, err := manifests.Render("config/crd")
	if err != nil {
		return err
	}
	// alm-examples: the samples and the OperatorConfig example, which
	// config/samples leaves out (the live one belongs to its users).
	samples, err := manifests.Render("config/samples")
	if err != nil {
		return err
	}
	operatorConfig, err := manifests.Render("config/samples/operatorconfig")
	if err != nil {
		return err
	}
	samples = append(samples, operatorConfig...)
	csv, err := clusterServiceVersion(all, samples, o.Graph)
	if err != nil {
		return err
	}
	for _, sub := range []string{"manifests", "metadata"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
	}
	files := map[string]any{filepath.Join("manifests", PackageName+".clusterserviceversion.yaml"): csv}
	for _, crd := range bases {
		// OLM wires the conversion webhook itself (webhookdefinitions).
		unstructured.RemoveNestedField(crd.Object, "spec", "conversion")
		files[filepath.Join("manifests", crd.GetName()+".yaml")] = crd.Object
	}
	// OLM creates a bundle's PodDisruptionBudget in the namespace it
	// installs the operator into, so it names none itself.
	for _, pdb := range manifests.OfKind(all, "PodDisruptionBudget") {
		pdb.SetNamespace("")
		files[filepath.Join("manifests", PDBFile(pdb.GetName()))] = pdb.Object
	}
	// config/manager's FlowSchemas (its Lease renewals on the API server's
	// leader-election priority level, the Drink defaulter's OperatorConfig
	// read on workload-high) are left out, as the optional fence
	// (config/leader-fence) would be: OLM installs from a
	// bundle only the CSV, CRDs and the kinds it knows (RBAC,
	// ServiceAccount, Service, Secret, ConfigMap, PodDisruptionBudget,
	// PriorityClass, VerticalPodAutoscaler, PrometheusRule, ServiceMonitor
	// and console kinds), and an install plan with another kind fails. An
	// admin who installs through OLM applies it apart (docs/olm.md).

	// The rights on Guestbook operands are granted per namespace by binding
	// this ClusterRole there; the bundle ships the role, and an admin (or
	// the Guestbook's status, which names the exact command) binds it in
	// the operand namespace, since a CSV's permissions cover only the
	// operator's own namespace. The roles for the operator's users ship
	// too: OLM makes aggregated roles of its own for the owned CRDs, but
	// these are the ones the docs name, the same with every install.
	for _, cr := range manifests.OfKind(all, "ClusterRole") {
		if cr.GetName() == OperandsClusterRole || slices.Contains(UserClusterRoles, cr.GetName()) {
			files[filepath.Join("manifests", cr.GetName()+"_rbac.authorization.k8s.io_v1_clusterrole.yaml")] = cr.Object
		}
	}
	ann := map[string]any{}
	for _, a := range Annotations {
		ann[a[0]] = a[1]
	}
	files[filepath.Join("metadata", "annotations.yaml")] = map[string]any{"annotations": ann}
	for name, obj := range files {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), append([]byte("# Generated by make bundle from config/; do not edit.\n"), data...), 0o644); err != nil {
			return err
		}
	}
	if !o.Dockerfile {
		return nil
	}
	var df strings.Builder
	df.WriteString("# Generated by make bundle; do not edit.\nFROM scratch\n")
	for _, a := range Annotations {
		fmt.Fprintf(&df, "LABEL %s=%s\n", a[0], a[1])
	}
	df.WriteString("COPY bundle/manifests /manifests/\nCOPY bundle/metadata /metadata/\n")
	return os.WriteFile(filepath.Join(filepath.Dir(dir), "bundle.Dockerfile"), []byte(df.String()), 0o644)
}

// OLMManagerArgs end the manager's arguments in the CSV.
var OLMManagerArgs = []string{"--manage-webhook-certs=false", "--webhook-cert-secret="}

// OperandsClusterRole grants the rights on Guestbook operands; it is
// bound per operand namespace (config/rbac/guestbook_operands_role.yaml).
const OperandsClusterRole = "myoperator-guestbook-operands"

// UserClusterRoles are the roles for the operator's users
// (config/rbac/drinks_edit_role.yaml, config/rbac/drinks_view_role.yaml,
// config/rbac/guestbooks_edit_role.yaml, config/rbac/guestbooks_view_role.yaml).
var UserClusterRoles = []string{"myoperator-drinks-edit", "myoperator-drinks-view", "myoperator-guestbooks-edit", "myoperator-guestbooks-view"}

// PDBFile is the bundle manifest of the PodDisruptionBudget name.
func PDBFile(name string) string { return name + "_policy_v1_poddisruptionbudget.yaml" }

// icon is the CSV's spec.icon, shown by catalogs (OperatorHub warns
// without one).
//
//go:embed icon.svg
var icon []byte

// installModes says in which OperatorGroup shapes OLM may install the
// operator. Only AllNamespaces is true: the operator watches Drinks in
// every namespace (its cache is not limited to an OperatorGroup's target
// namespaces, and it ignores olm.targetNamespaces), Guestbooks and the
// OperatorConfig are cluster-scoped, its webhooks and the Drink conversion
// webhook serve every namespace (OLM accepts a conversion webhook only
// with AllNamespaces alone), and it runs Guestbook operands in the operand
// namespace the OperatorConfig names, not in the namespace it is installed
// into. OwnNamespace, SingleNamespace and MultiNamespace would promise a
// scoping it does not do.
func installModes() []any {
	return []any{
		map[string]any{"type": "OwnNamespace", "supported": false},
		map[string]any{"type": "SingleNamespace", "supported": false},
		map[string]any{"type": "MultiNamespace", "supported": false},
		map[string]any{"type": "AllNamespaces", "supported": true},
	}
}

func clusterServiceVersion(all, samples []*unstructured.Unstructured, g Graph) (map[string]any, error) {
	version := g.Version.String()
	deps := manifests.OfKind(all, "Deployment")
	if len(deps) != 1 {
		return nil, fmt.Errorf("config/default renders %d Deployments, want 1", len(deps))
	}
	depSpec, _, _ := unstructured.NestedMap(deps[0].Object, "spec")
	// OLM issues the webhook certificate, mounts it in the manager's
	// --webhook-cert-dir (/tmp/k8s-webhook-server/serving-certs) and
	// injects its CA: the manager manages no certificate and serves the
	// mounted files, not a Secret (an empty --webhook-cert-secret).
	containers, _, _ := unstructured.NestedSlice(depSpec, "template", "spec", "containers")
	image := ""
	for i, c := range containers {
		cm, _ := c.(map[string]any)
		if cm["name"] == "manager" {
			image, _ = cm["image"].(string)
			args, _, _ := unstructured.NestedStringSlice(cm, "args")
			cm["args"] = toAny(append(args, OLMManagerArgs...))
			containers[i] = cm
		}
	}
	if err := unstructured.SetNestedSlice(depSpec, containers, "template", "spec", "containers"); err != nil {
		return nil, err
	}
	var clusterRules, nsRules []any
	for _, r := range manifests.OfKind(all, "ClusterRole") {
		if r.GetName() == "myoperator-manager-role" {
			clusterRules, _, _ = unstructured.NestedSlice(r.Object, "rules")
		}
	}
	for _, r := range manifests.OfKind(all, "Role") {
		nsRules, _, _ = unstructured.NestedSlice(r.Object, "rules")
	}
	var owned []any
	for _, crd := range manifests.OfKind(all, "CustomResourceDefinition") {
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			vm, _ := v.(map[string]any)
			desc, _, _ := unstructured.NestedString(vm, "schema", "openAPIV3Schema", "description")
			owned = append(owned, map[string]any{
				"name": crd.GetName(), "version": vm["name"], "kind": kind, "displayName": kind, "description": desc,
			})
		}
	}
	webhooks := webhookDefinitions(all)
	related, err := relatedImages(all, image)
	if err != nil {
		return nil, err
	}
	examples, err := yaml.Marshal(objects(samples))
	if err != nil {
		return nil, err
	}
	examplesJSON, err := yaml.YAMLToJSON(examples)
	if err != nil {
		return nil, err
	}
	annotations := map[string]any{
		"alm-examples":   string(examplesJSON),
		"capabilities":   "Seamless Upgrades",
		"categories":     "Developer Tools",
		"containerImage": image,
		"operators.operatorframework.io/suggested-namespace": "myoperator-system",
	}
	if r := g.SkipRange(); r != "" {
		annotations["olm.skipRange"] = r
	}
	spec := map[string]any{
		"displayName":    "myoperator",
		"icon":           []any{map[string]any{"base64data": base64.StdEncoding.EncodeToString(icon), "mediatype": "image/svg+xml"}},
		"description":    "Drinks rendered into ConfigMaps in three API versions at once, the Kubebuilder Guestbook as an active/standby application, configured live through one OperatorConfig.",
		"version":        version,
		"maturity":       Channel,
		"minKubeVersion": MinKubeVersion,
		"provider":       map[string]any{"name": "example.com"},
		// The licence of the repository's LICENSE, where OperatorHub shows
		// a CSV's links.
		"links":                     []any{map[string]any{"name": "License: Apache-2.0", "url": "https://www.apache.org/licenses/LICENSE-2.0"}},
		"installModes":              installModes(),
		"customresourcedefinitions": map[string]any{"owned": owned},
		"install": map[string]any{
			"strategy": "deployment",
			"spec": map[string]any{
				"deployments":        []any{map[string]any{"name": DeploymentName, "spec": depSpec}},
				"clusterPermissions": []any{map[string]any{"serviceAccountName": ServiceAccount, "rules": WithoutCertRights(clusterRules)}},
				"permissions":        []any{map[string]any{"serviceAccountName": ServiceAccount, "rules": nsRules}},
			},
		},
		"webhookdefinitions": webhooks,
		"relatedImages":      related,
	}
	if r := g.Replaces(); r != "" {
		spec["replaces"] = r
	}
	return map[string]any{
		"apiVersion": "operators.coreos.com/v1alpha1",
		"kind":       "ClusterServiceVersion",
		"metadata":   map[string]any{"name": g.Version.CSVName(), "annotations": annotations},
		"spec":       spec,
	}, nil
}

// relatedImages lists every image the operator runs, so that a
// disconnected cluster's mirror (oc adm catalog mirror, opm) copies them:
// the manager's, and the Guestbook pods' default, which the manager's
// GUESTBOOK_IMAGE names.
func relatedImages(all []*unstructured.Unstructured, manager string) ([]any, error) {
	guestbook := ""
	for _, d := range manifests.OfKind(all, "Deployment") {
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			cm, _ := c.(map[string]any)
			env, _, _ := unstructured.NestedSlice(cm, "env")
			for _, e := range env {
				em, _ := e.(map[string]any)
				if em["name"] == "GUESTBOOK_IMAGE" {
					guestbook, _ = em["value"].(string)
				}
			}
		}
	}
	if manager == "" || guestbook == "" {
		return nil, fmt.Errorf("related images: the manager's %q or the Guestbook's default (GUESTBOOK_IMAGE) %q not found in config/default", manager, guestbook)
	}
	return []any{
		map[string]any{"name": "manager", "image": manager},
		map[string]any{"name": "guestbook", "image": guestbook},
	}, nil
}

// webhookDefinitions declares every admission webhook of config/webhook and
// the Drink conversion webhook.
func webhookDefinitions(all []*unstructured.Unstructured) []any {
	var out []any
	for kind, typ := range map[string]string{
		"MutatingWebhookConfiguration":   "MutatingAdmissionWebhook",
		"ValidatingWebhookConfiguration": "ValidatingAdmissionWebhook",
	} {
		for _, cfg := range manifests.OfKind(all, kind) {
			hooks, _, _ := unstructured.NestedSlice(cfg.Object, "webhooks")
			for _, h := range hooks {
				hm, _ := h.(map[string]any)
				path, _, _ := unstructured.NestedString(hm, "clientConfig", "service", "path")
				def := map[string]any{
					"type": typ, "generateName": hm["name"], "deploymentName": DeploymentName,
					"containerPort": int64(443), "targetPort": int64(9443), "webhookPath": path,
					"admissionReviewVersions": hm["admissionReviewVersions"], "failurePolicy": hm["failurePolicy"],
					"matchPolicy": hm["matchPolicy"], "rules": hm["rules"], "sideEffects": hm["sideEffects"],
					"timeoutSeconds": hm["timeoutSeconds"],
				}
				if rp, ok := hm["reinvocationPolicy"]; ok {
					def["reinvocationPolicy"] = rp
				}
				out = append(out, def)
			}
		}
	}
	slices.SortFunc(out, func(a, b any) int {
		return strings.Compare(fmt.Sprint(a.(map[string]any)["generateName"]), fmt.Sprint(b.(map[string]any)["generateName"]))
	})
	out = append(out, map[string]any{
		"type": "ConversionWebhook", "generateName": "cdrink.example.com", "deploymentName": DeploymentName,
		"containerPort": int64(443), "targetPort": int64(9443), "webhookPath": "/convert",
		"admissionReviewVersions": []any{"v1"}, "sideEffects": "None", "conversionCRDs": []any{"drinks.example.com"},
	})
	return out
}

func objects(us []*unstructured.Unstructured) []any {
	out := make([]any, 0, len(us))
	for _, u := range us {
		out = append(out, u.Object)
	}
	return out
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

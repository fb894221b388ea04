package olmbundle_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/example/myoperator/test/framework/testutil"
)

// olmKinds are the kinds OLM installs from a bundle besides the CSV and
// CRDs (operator-lifecycle-manager's install plan: RBAC, ServiceAccount,
// Service, Secret, ConfigMap, and its supportedKinds list); an install plan
// with any other kind fails.
var olmKinds = map[string]bool{
	"ClusterServiceVersion": true, "CustomResourceDefinition": true,
	"ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true,
	"ServiceAccount": true, "Service": true, "Secret": true, "ConfigMap": true,
	"PodDisruptionBudget": true, "PriorityClass": true, "VerticalPodAutoscaler": true,
	"PrometheusRule": true, "ServiceMonitor": true,
	"ConsoleYAMLSample": true, "ConsoleQuickStart": true, "ConsoleCLIDownload": true, "ConsoleLink": true,
}

// TestBundleKindsOLMInstalls: every manifest of bundle/ is of a kind OLM
// installs. config/default's FlowSchemas (config/manager/flowschema.yaml)
// are not (nor is the optional config/leader-fence's
// ValidatingAdmissionPolicy): the bundle leaves them out, and an admin who
// installs through OLM applies them apart.
func TestBundleKindsOLMInstalls(t *testing.T) {
	root, err := testutil.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "bundle", "manifests")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		kind, _ := readYAML(t, filepath.Join(dir, e.Name()))["kind"].(string)
		if !olmKinds[kind] {
			t.Errorf("bundle/manifests/%s is a %q, which OLM does not install from a bundle", e.Name(), kind)
		}
	}
}

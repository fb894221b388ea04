package olmbundle_test

import (
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/example/myoperator/hack/olmbundle"
	"github.com/example/myoperator/test/framework/manifests"
	"github.com/example/myoperator/test/framework/testutil"
)

// TestBundlePodDisruptionBudget: an OLM install keeps a manager replica
// through a drain as config/default does: the bundle carries each of its
// PodDisruptionBudgets with the same spec and no namespace (OLM installs it
// into the operator's).
func TestBundlePodDisruptionBudget(t *testing.T) {
	root, err := testutil.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	all, err := manifests.Render("config/default")
	if err != nil {
		t.Fatal(err)
	}
	pdbs := manifests.OfKind(all, "PodDisruptionBudget")
	if len(pdbs) == 0 {
		t.Fatal("config/default has no PodDisruptionBudget")
	}
	for _, want := range pdbs {
		got := &unstructured.Unstructured{Object: readYAML(t, filepath.Join(root, "bundle", "manifests", olmbundle.PDBFile(want.GetName())))}
		if got.GetKind() != "PodDisruptionBudget" || got.GetNamespace() != "" {
			t.Errorf("bundle %s: %s in namespace %q, want a PodDisruptionBudget without namespace", want.GetName(), got.GetKind(), got.GetNamespace())
		}
		if !reflect.DeepEqual(got.Object["spec"], want.Object["spec"]) {
			t.Errorf("bundle PodDisruptionBudget %s: spec %v, config/default has %v", want.GetName(), got.Object["spec"], want.Object["spec"])
		}
	}
}

package installtargets_test

import (
	"errors"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/example/myoperator/test/framework/manifests"
)

// TestOperatorOverlayKeepsUsersData: config/default is exactly its three
// parts, and config/operator, which make undeploy and kubectl delete -k
// remove, holds no CRD and no namespace but the operator's own, so that
// removing the operator never deletes the CRDs (and with them every custom
// resource) or the Guestbook operand namespace (and every operand in it).
func TestOperatorOverlayKeepsUsersData(t *testing.T) {
	ids := func(dir string) map[string]bool {
		t.Helper()
		objs, err := manifests.Render(dir)
		if err != nil {
			t.Fatal(err)
		}
		set := map[string]bool{}
		for _, o := range objs {
			set[o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()] = true
		}
		return set
	}
	operator := ids("config/operator")
	for id := range operator {
		if kind, _, _ := strings.Cut(id, " "); (kind == "CustomResourceDefinition" || kind == "Namespace") && id != "Namespace /myoperator-system" {
			t.Errorf("config/operator (make undeploy deletes it) holds %s", id)
		}
	}
	parts := map[string]bool{}
	for _, dir := range []string{"config/crd", "config/operand-namespace", "config/operator"} {
		maps.Copy(parts, ids(dir))
	}
	if def := ids("config/default"); !maps.Equal(def, parts) {
		t.Errorf("config/default renders\n%v\nits parts config/crd, config/operand-namespace and config/operator\n%v",
			slices.Sorted(maps.Keys(def)), slices.Sorted(maps.Keys(parts)))
	}
	if !parts["Namespace /guestbook"] || len(ids("config/crd")) != 3 {
		t.Errorf("config/default lost the operand namespace or a CRD: %v", slices.Sorted(maps.Keys(parts)))
	}
}

// TestUndeployRefusesCRDs: make undeploy pointed at a kustomization with
// the CRDs (UNDEPLOY_CONFIG=config/default) deletes nothing and says which
// target removes the CRDs; it stops before it reaches any cluster.
func TestUndeployRefusesCRDs(t *testing.T) {
	out, err := run(t, filepath.Join(t.TempDir(), "no-cluster"), "make", "undeploy", "UNDEPLOY_CONFIG=config/default")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(out, "undeploy: config/default holds CustomResourceDefinitions") ||
		!strings.Contains(out, "nothing deleted") {
		t.Fatalf("make undeploy UNDEPLOY_CONFIG=config/default: %v, want a refusal:\n%s", err, out)
	}
}

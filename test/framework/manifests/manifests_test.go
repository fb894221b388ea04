package manifests_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/example/myoperator/internal/scheme"
	"github.com/example/myoperator/test/framework/manifests"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/framework/testutil"
)

// TestServerSideDryRun: everything `kubectl kustomize config/default`
// renders passes a server-side dry run against the project-built API server.
func TestServerSideDryRun(t *testing.T) {
	dir, err := testenv.BinaryDir()
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: dir}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	// A dry-run creates nothing, so the namespaced objects need their
	// namespace for real.
	for _, ns := range []string{"myoperator-system", "guestbook"} {
		if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	root, err := testutil.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command("kubectl", "--kubeconfig", kubeconfig, "apply", "--server-side", "--dry-run=server", "-k", filepath.Join(root, "config", "default"))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("server-side dry run of config/default: %v\n%s", err, out.String())
	}
	objs, err := manifests.Render("config/default")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), "(server dry run)"); got != len(objs) {
		t.Errorf("%d objects dry-run, config/default renders %d:\n%s", got, len(objs), out.String())
	}
}

// TestLeastPrivilege: the manager's roles hold no wildcard, no create of
// CRDs, CRD writes limited by resourceNames to the project's CRDs, and
// Secrets only in its own namespace.
func TestLeastPrivilege(t *testing.T) {
	objs, err := manifests.Render("config/rbac")
	if err != nil {
		t.Fatal(err)
	}
	ownCRDs := []string{"drinks.example.com", "guestbooks.webapp.my.domain", "operatorconfigs.operator.example.com"}
	checked := 0
	for _, kind := range []string{"ClusterRole", "Role"} {
		for _, o := range manifests.OfKind(objs, kind) {
			role := &rbacv1.ClusterRole{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role); err != nil {
				t.Fatal(err)
			}
			for _, r := range role.Rules {
				checked++
				for _, field := range [][]string{r.APIGroups, r.Resources, r.Verbs, r.ResourceNames, r.NonResourceURLs} {
					if slices.Contains(field, "*") {
						t.Errorf("%s %s: wildcard in %+v", kind, o.GetName(), r)
					}
				}
				if slices.Contains(r.APIGroups, "apiextensions.k8s.io") {
					if slices.Contains(r.Verbs, "create") || slices.Contains(r.Verbs, "delete") {
						t.Errorf("%s %s may create or delete CRDs: %+v", kind, o.GetName(), r)
					}
					writes := slices.ContainsFunc(r.Verbs, func(v string) bool { return v == "update" || v == "patch" })
					if writes && (len(r.ResourceNames) == 0 || slices.ContainsFunc(r.ResourceNames, func(n string) bool { return !slices.Contains(ownCRDs, n) })) {
						t.Errorf("%s %s writes CRDs beyond the project's own: %+v", kind, o.GetName(), r)
					}
				}
				if slices.Contains(r.Resources, "secrets") && (kind != "Role" || o.GetNamespace() != "myoperator-system") {
					t.Errorf("%s %s reaches Secrets outside myoperator-system: %+v", kind, o.GetName(), r)
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d rules found in config/rbac", checked)
	}
}

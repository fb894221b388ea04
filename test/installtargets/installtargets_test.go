package installtargets_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/framework/testutil"
)

var crds = []string{"drinks.example.com", "guestbooks.webapp.my.domain", "operatorconfigs.operator.example.com"}

// usersObjects: 6 Drinks in 3 namespaces (2, 3, 1), 3 Guestbooks and the
// OperatorConfig.
func usersObjects() string {
	var m strings.Builder
	for ns, n := range map[string]int{"team-a": 2, "team-b": 3, "team-c": 1} {
		fmt.Fprintf(&m, "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns)
		for i := range n {
			fmt.Fprintf(&m, "---\napiVersion: example.com/v1\nkind: Drink\nmetadata: {name: d%d, namespace: %s}\nspec: {displayName: D%d, beverage: tea, size: Small}\n", i, ns, i)
		}
	}
	for i := 1; i <= 3; i++ {
		fmt.Fprintf(&m, "---\napiVersion: webapp.my.domain/v1\nkind: Guestbook\nmetadata: {name: g%d}\nspec: {size: %d, configMapName: g%d-conf}\n", i, i, i)
	}
	m.WriteString("---\napiVersion: operator.example.com/v1alpha1\nkind: OperatorConfig\nmetadata: {name: cluster}\nspec: {managementState: Managed}\n")
	return m.String()
}

// TestInstallAndUninstall runs the real Make targets against an API server
// without an operator: with the CRDs and no object, make uninstall counts 0
// and still asks for the flag; make uninstall CONFIRM=yes deletes the CRDs;
// with no CRD, make uninstall has nothing to delete and exits 0; make
// install installs the CRDs; with users' objects present, make uninstall
// without CONFIRM=yes (and with another value) prints how many Drinks,
// Guestbooks and OperatorConfigs it would delete and where, names the flag,
// exits non-zero and deletes nothing; with CONFIRM=yes it deletes the CRDs
// and every object with them.
func TestInstallAndUninstall(t *testing.T) {
	// The API server starts with the CRDs installed (envtest, as
	// config/crd renders them); the test removes them with make uninstall
	// before it installs them with make install.
	env, _, c := testenv.Start(t, testenv.Options{})
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	out, err := run(t, kubeconfig, "make", "uninstall")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !normalized(out)["0 Drinks (drinks.example.com)"] {
		t.Fatalf("make uninstall with the CRDs and no object: %v, want a non-zero exit and 0 Drinks counted:\n%s", err, out)
	}
	if out, err := run(t, kubeconfig, "make", "uninstall", "CONFIRM=yes"); err != nil {
		t.Fatalf("make uninstall CONFIRM=yes: %v\n%s", err, out)
	}
	out, err = run(t, kubeconfig, "make", "uninstall")
	if err != nil || !strings.Contains(out, "nothing to delete") {
		t.Fatalf("make uninstall with no CRD installed: %v, want exit 0 and nothing to delete:\n%s", err, out)
	}

	// make test has run `make manifests` already; -o keeps this run from
	// rewriting config/ while other test packages read it.
	if out, err := run(t, kubeconfig, "make", "-o", "manifests", "install"); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	for _, name := range crds {
		testenv.Eventually(t, 30*time.Second, func() string {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return err.Error()
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return ""
				}
			}
			return "CRD " + name + " not established"
		})
	}
	// The API server may take a moment to serve new CRDs' resources.
	testenv.Eventually(t, 30*time.Second, func() string {
		out, err := runStdin(t, kubeconfig, usersObjects(), "kubectl", "apply", "-f", "-")
		if err != nil {
			return out
		}
		return ""
	})
	// g3 has no operand namespace yet, as before its first reconcile.
	for name, ns := range map[string]string{"g1": "guestbook", "g2": "team-x"} {
		if out, err := run(t, kubeconfig, "kubectl", "patch", "guestbook", name, "--subresource=status", "--type=merge",
			"-p", `{"status":{"operandNamespace":"`+ns+`"}}`); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}

	for _, args := range [][]string{{"make", "uninstall"}, {"make", "uninstall", "CONFIRM=y"}} {
		out, err := run(t, kubeconfig, args...)
		if !errors.As(err, &exit) {
			t.Fatalf("%v: %v, want a non-zero exit:\n%s", args, err, out)
		}
		lines := normalized(out)
		for _, want := range []string{
			"6 Drinks (drinks.example.com), in namespaces:",
			"2 team-a",
			"3 team-b",
			"1 team-c",
			"3 Guestbooks (guestbooks.webapp.my.domain), cluster-scoped, operands in namespaces:",
			"1 (none yet)",
			"1 guestbook",
			"1 team-x",
			"1 OperatorConfig (operatorconfigs.operator.example.com), cluster-scoped, named:",
			"1 cluster",
			"uninstall: nothing deleted. To delete the CRDs and every object above, run: make uninstall CONFIRM=yes",
		} {
			if !lines[want] {
				t.Errorf("%v: no line %q in:\n%s", args, want, out)
			}
		}
		countObjects(ctx, t, c, 6, 3, 1)
	}
	if t.Failed() {
		t.FailNow()
	}

	out, err = run(t, kubeconfig, "make", "uninstall", "CONFIRM=yes")
	if err != nil {
		t.Fatalf("make uninstall CONFIRM=yes: %v\n%s", err, out)
	}
	for _, name := range crds {
		err := c.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("CRD %s after make uninstall CONFIRM=yes: %v, want NotFound", name, err)
		}
	}
	t.Logf("make uninstall CONFIRM=yes:\n%s", out)
}

// countObjects checks that the users' objects are all still there.
func countObjects(ctx context.Context, t *testing.T, c client.Client, drinks, guestbooks, configs int) {
	t.Helper()
	d, g, o := &drinksv1.DrinkList{}, &webappv1.GuestbookList{}, &operatorv1alpha1.OperatorConfigList{}
	for _, l := range []client.ObjectList{d, g, o} {
		if err := c.List(ctx, l); err != nil {
			t.Fatalf("listing after make uninstall without CONFIRM=yes: %v", err)
		}
	}
	if len(d.Items) != drinks || len(g.Items) != guestbooks || len(o.Items) != configs {
		t.Errorf("after make uninstall without CONFIRM=yes: %d Drinks, %d Guestbooks, %d OperatorConfigs, want %d, %d, %d",
			len(d.Items), len(g.Items), len(o.Items), drinks, guestbooks, configs)
	}
}

// normalized is the set of out's lines with runs of spaces collapsed.
func normalized(out string) map[string]bool {
	lines := map[string]bool{}
	for line := range strings.Lines(out) {
		lines[strings.Join(strings.Fields(line), " ")] = true
	}
	return lines
}

func run(t *testing.T, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	return runStdin(t, kubeconfig, "", args...)
}

// runStdin runs a command in the repository root against the test's API
// server (KUBECONFIG, as a user would) and returns both outputs. A make
// started by make (make test) must not inherit the outer make's flags.
func runStdin(t *testing.T, kubeconfig, stdin string, args ...string) (string, error) {
	t.Helper()
	root, err := testutil.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = root
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MAKELEVEL" && k != "MFLAGS" && k != "KUBECONFIG" && k != "CONFIRM" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "KUBECONFIG="+kubeconfig)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}

package bootstrap_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/framework/testutil"
)

// otherImage is compiled into the test's bootstrap binary as the Guestbook
// default, as make dist stamps a release's: the created OperatorConfig
// must not name it (nor any other default).
const otherImage = "registry.invalid/compiled-in:v0"

// buildBootstrap builds the initContainer binary, as the image ships it,
// with otherImage as its compiled-in Guestbook default.
func buildBootstrap(t *testing.T) string {
	t.Helper()
	root, err := testutil.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-ldflags", "-X github.com/example/myoperator/apis/operator/v1alpha1.DefaultGuestbookImage="+otherImage, "-o", bin, "./initcontainer")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./initcontainer: %v\n%s", err, out)
	}
	return bin
}

// runBootstrap runs the binary against the environment's API server.
func runBootstrap(t *testing.T, bin string, env *envtest.Environment, args ...string) (string, error) {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(bin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestBootstrapCreatesOnceAndNeverOverwrites: with the CRDs installed, the
// first run creates OperatorConfig cluster with an empty spec, a second run
// changes nothing, and an OperatorConfig edited by a user is left as is.
func TestBootstrapCreatesOnceAndNeverOverwrites(t *testing.T) {
	bin := buildBootstrap(t)
	env, _, c := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	key := client.ObjectKey{Name: operatorv1alpha1.SingletonName}

	out, err := runBootstrap(t, bin, env)
	if err != nil {
		t.Fatalf("first run: %v\n%s", err, out)
	}
	if !strings.Contains(out, "created OperatorConfig with an empty spec") {
		t.Errorf("first run does not say it created the OperatorConfig:\n%s", out)
	}
	first := &operatorv1alpha1.OperatorConfig{}
	if err := c.Get(ctx, key, first); err != nil {
		t.Fatalf("no OperatorConfig after the first run: %v", err)
	}
	// Nothing in the spec, not even after the API server's defaulting: every
	// value follows the running release's defaults (the binary's compiled-in
	// image included).
	if (first.Spec != operatorv1alpha1.OperatorConfigSpec{}) {
		t.Errorf("created spec %+v, want it empty", first.Spec)
	}

	out, err = runBootstrap(t, bin, env)
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, out)
	}
	second := &operatorv1alpha1.OperatorConfig{}
	if err := c.Get(ctx, key, second); err != nil {
		t.Fatal(err)
	}
	if second.ResourceVersion != first.ResourceVersion {
		t.Errorf("second run changed the OperatorConfig: resourceVersion %s -> %s", first.ResourceVersion, second.ResourceVersion)
	}

	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, key, second); err != nil {
			return err
		}
		second.Spec.LogLevel = operatorv1alpha1.LogDebug
		second.Spec.Drinks.DefaultSize = "Large"
		return c.Update(ctx, second)
	}); err != nil {
		t.Fatal(err)
	}
	out, err = runBootstrap(t, bin, env)
	if err != nil {
		t.Fatalf("run after a user edit: %v\n%s", err, out)
	}
	third := &operatorv1alpha1.OperatorConfig{}
	if err := c.Get(ctx, key, third); err != nil {
		t.Fatal(err)
	}
	if third.ResourceVersion != second.ResourceVersion || third.Spec.LogLevel != operatorv1alpha1.LogDebug || third.Spec.Drinks.DefaultSize != "Large" {
		t.Errorf("bootstrap touched the user's OperatorConfig: %+v (resourceVersion %s -> %s)", third.Spec, second.ResourceVersion, third.ResourceVersion)
	}
}

// TestBootstrapWithoutCRDs: without the CRD, it waits (bounded, reporting
// progress), then exits non-zero with a message that says to install the
// CRDs.
func TestBootstrapWithoutCRDs(t *testing.T) {
	bin := buildBootstrap(t)
	dir, err := testenv.BinaryDir()
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: dir}
	if _, err := env.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	start := time.Now()
	out, err := runBootstrap(t, bin, env, "--timeout=3s", "--interval=1s")
	var exit *exec.ExitError
	if err == nil || !asExit(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("want a non-zero exit without the CRD, got %v\n%s", err, out)
	}
	if elapsed := time.Since(start); elapsed > 20*time.Second {
		t.Errorf("took %s with a 3s timeout", elapsed)
	}
	for _, want := range []string{"waiting for CRD", "operatorconfigs.operator.example.com", "install the CRDs first"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func asExit(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError) //nolint:errorlint // exec returns the ExitError itself.
	*target = e
	return ok
}

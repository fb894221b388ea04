package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/example/myoperator/internal/app"
	"github.com/example/myoperator/test/framework/testutil"
)

// StartManager starts the operator's manager (app.New) in this process
// against env, serving its webhooks on the local host, port and
// certificates envtest set up, and waits until the webhook server serves.
// Metrics and probes are off unless o sets them. Cancel ctx to stop it.
func StartManager(ctx context.Context, env *envtest.Environment, cfg *rest.Config, o app.Options) error {
	wo := env.WebhookInstallOptions
	o.WebhookHost, o.WebhookPort, o.CertDir = wo.LocalServingHost, wo.LocalServingPort, wo.LocalServingCertDir
	if o.Namespace == "" {
		o.Namespace = "myoperator-system"
	}
	if o.MetricsAddr == "" {
		o.MetricsAddr = "0"
	}
	if o.ProbeAddr == "" {
		o.ProbeAddr = "0"
	}
	mgr, err := app.New(cfg, o)
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager stopped:", err)
		}
	}()
	return WaitForWebhookServer(ctx, mgr, 30*time.Second)
}

// BuiltManagerEnv names the manager binary make test builds from the
// tree once, before go test, for every test that runs the manager as a
// process: each building its own linked the same binary about a dozen
// times a run, 3.6 CPU seconds each.
const BuiltManagerEnv = "MYOPERATOR_TEST_MANAGER"

// ManagerBinary returns the manager binary to run: $override when that is
// set (another build, for example one with a planted bug, to see a test
// fail), else $MYOPERATOR_TEST_MANAGER (make test's build of this tree),
// else one it builds from the repository into a temporary folder of t.
func ManagerBinary(t testing.TB, override string) string {
	t.Helper()
	if override != "" {
		if bin := os.Getenv(override); bin != "" {
			t.Logf("manager binary from $%s: %s", override, bin)
			return bin
		}
	}
	if bin := os.Getenv(BuiltManagerEnv); bin != "" {
		return bin
	}
	root, err := testutil.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "manager")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// RunManager starts mgr in the background for the rest of the test, and
// fails the test when Start returns an error. Its cleanup stops the
// manager and waits for Start to return; registered after the API
// server's, it runs before the API server stops. Without the wait, a
// manager still stopping when the API server went away reported its error
// after the test had completed, which panics the whole package's run.
func RunManager(ctx context.Context, t testing.TB, mgr manager.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager stopped: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

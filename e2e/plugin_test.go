//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/types"
)

// doctorTimeout bounds how long the cluster may take to settle after a
// feature (a deleted Drink's ConfigMap collected, a new leader, a ready
// endpoint) before kubectl myoperator doctor must report nothing.
const doctorTimeout = 60 * time.Second

// buildPlugin builds the kubectl plugin (kubectl-myoperator) from the
// repository once, into bin/<E2E_NAME>-plugin, and puts that folder first on
// PATH, where kubectl finds it as kubectl myoperator.
func buildPlugin(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	dir := filepath.Join(root, "bin", runName+"-plugin")
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-myoperator"), "./kubectl-myoperator")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return ctx, fmt.Errorf("go build ./kubectl-myoperator: %w: %s", err, out)
	}
	return ctx, os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// doctorAfterFeature runs kubectl myoperator doctor after each feature
// that passed, until it reports nothing (exit 0) or doctorTimeout passes;
// then the feature fails with the last report. It then prints kubectl
// myoperator status, which must succeed.
func doctorAfterFeature(ctx context.Context, cfg *envconf.Config, t *testing.T, f types.Feature) (context.Context, error) {
	if t.Failed() || t.Skipped() {
		return ctx, nil
	}
	start := time.Now()
	var out []byte
	var err error
	for {
		cmd := exec.CommandContext(ctx, "kubectl", "myoperator", "doctor", "--kubeconfig", cfg.KubeconfigFile())
		if out, err = cmd.CombinedOutput(); err == nil {
			break
		}
		if time.Since(start) > doctorTimeout {
			t.Errorf("kubectl myoperator doctor after %q: not clean after %s: %v\n%s", f.Name(), doctorTimeout, err, out)
			return ctx, nil
		}
		time.Sleep(time.Second)
	}
	fmt.Printf("e2e: kubectl myoperator doctor after %q: clean in %s: %s", f.Name(), time.Since(start).Round(time.Millisecond), out)
	// The summary of the same cluster must be readable too.
	if out, err = exec.CommandContext(ctx, "kubectl", "myoperator", "status", "--kubeconfig", cfg.KubeconfigFile()).CombinedOutput(); err != nil {
		t.Errorf("kubectl myoperator status after %q: %v\n%s", f.Name(), err, out)
		return ctx, nil
	}
	lines := strings.SplitAfter(string(out), "\n")
	if len(lines) > 40 { // a feature may leave a hundred Drinks
		lines = append(lines[:40], fmt.Sprintf("  ... %d more lines\n", len(lines)-40))
	}
	fmt.Printf("e2e: kubectl myoperator status after %q:%s", f.Name(), strings.Join(lines, ""))
	return ctx, nil
}

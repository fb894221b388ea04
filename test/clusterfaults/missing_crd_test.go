package clusterfaults

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/myoperator/test/bench"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/framework/testutil"
	"github.com/example/myoperator/test/reliability"
)

// TestManagerWaitsForItsCRDs: a manager started while one of its CRDs is
// not served (not installed yet, or an API server just restarted, whose
// CRD discovery lags its /version) waits and says which group version it
// waits for, instead of exiting into a crash loop; once the CRD is there it
// starts and becomes ready. Before the wait, it exited at once: "failed to
// determine if *v1.Drink is namespaced ... no matches for
// example.com/v1", as CI saw after an API server restart.
func TestManagerWaitsForItsCRDs(t *testing.T) {
	began := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p := startPlane(ctx, t, bench.PlaneOptions{}, false)
	root, err := testutil.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(p.cp.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "drinks.example.com"}}
	if err := c.Delete(ctx, crd); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, func() string {
		if err := c.Get(ctx, client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{}); err == nil {
			return "the Drink CRD is still there"
		}
		return ""
	})

	m, err := bench.StartManager(p.opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	startedAt := time.Now()
	const want = `"groupVersion":"example.com/v1"`
	testenv.Eventually(t, 30*time.Second, func() string {
		if !m.Running() {
			return "" // reported below
		}
		log, _ := os.ReadFile(p.opts.LogFile)
		if !strings.Contains(string(log), "waiting for the API server to serve the operator's CRDs") || !strings.Contains(string(log), want) {
			return "the manager's log does not say it waits for " + want
		}
		return ""
	})
	time.Sleep(3 * time.Second) // a manager that gives up exits within this
	if !m.Running() {
		t.Fatalf("the manager exited without the Drink CRD: %v; its log:\n%s", m.Wait(time.Second), tail(p.opts.LogFile, 10))
	}

	// Back as install-local made it (its conversion calls the manager).
	apply := exec.CommandContext(ctx, "kubectl", "--kubeconfig", p.cp.Kubeconfig, "apply", "--server-side", "-k", filepath.Join(root, "config", "local"))
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply -k config/local: %v: %s", err, out)
	}
	created := time.Now()
	if err := m.WaitReady(ctx, 90*time.Second); err != nil {
		t.Fatalf("after the CRD came back: %v; its log:\n%s", err, tail(p.opts.LogFile, 10))
	}
	ready := time.Since(created)
	t.Logf("the manager waited while example.com/v1 was not served, and was ready %s after the CRD was created", ready.Round(time.Millisecond))
	exits := 0
	if !m.Running() {
		exits = 1
	}
	reliability.Save(t, map[string]any{
		"waitedSeconds": reliability.Seconds(created.Sub(startedAt)),
		"readySeconds":  reliability.Seconds(ready),
		"exits":         exits,
		"testSeconds":   reliability.Seconds(time.Since(began)),
	}, managerBinaryEnv)
}

package webhook_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/example/myoperator/internal/app"
	"github.com/example/myoperator/internal/scheme"
	"github.com/example/myoperator/internal/webhookguard"
	"github.com/example/myoperator/test/framework/testenv"
)

var (
	env        *envtest.Environment
	cfg        *rest.Config
	k8s        client.Client
	kubeconfig string
)

// TestMain starts the project-built kube-apiserver with config/crd and
// config/webhook installed, and the operator's manager (app.New) serving
// every webhook on loopback, bounded as a replica with a 512 Mi limit
// (slow_requests_test.go).
func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	var err error
	if env, err = testenv.New(testenv.Options{Webhooks: true}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "starting the API server:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	limits := webhookguard.Limits{BufferBytes: webhookguard.BufferFor(testMemoryLimit), ReadTimeout: testReadTimeout, WriteTimeout: testWriteTimeout}
	if err := testenv.StartManager(ctx, env, cfg, app.Options{WebhookLimits: limits}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme.New()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "webhook-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// namespace creates a namespace of the test's own and removes it after.
func namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "wh-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	return ns.Name
}

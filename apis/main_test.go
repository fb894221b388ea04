package apis_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/myoperator/internal/app"
	"github.com/example/myoperator/internal/scheme"
	"github.com/example/myoperator/test/framework/testenv"
)

var (
	cfg *rest.Config
	k8s client.Client
	// kubeconfig is a file for kubectl, which the tests run as users do.
	kubeconfig string
)

// TestMain starts the project-built kube-apiserver with the CRDs of
// config/crd and the operator's manager (webhooks and reconcilers), so that
// every version can be written and read, and writes a kubeconfig for kubectl.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	env, err := testenv.New(testenv.Options{Webhooks: true})
	if err != nil {
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
	if err := testenv.StartManager(ctx, env, cfg, app.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme.New()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	kc, remove, err := testenv.WriteKubeconfig(env)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer remove()
	kubeconfig = kc
	return m.Run()
}

package testenv

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/example/myoperator/internal/scheme"
	"github.com/example/myoperator/test/framework/testutil"
)

// Start starts an environment for one test (see New), stops it when the
// test ends, and returns its config and an administrator's client.
func Start(t testing.TB, opts Options) (*envtest.Environment, *rest.Config, client.Client) {
	t.Helper()
	// A gate the API server does not know stops it from starting: the
	// test skips first, saying which gate and from which version.
	SkipUnlessGates(t, opts.FeatureGates)
	env, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting the API server: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return env, cfg, c
}

// Eventually polls cond every 200 ms until it returns "" or timeout
// passes, then fails the test with cond's last explanation.
func Eventually(t testing.TB, timeout time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		why := cond()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, why)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// WriteKubeconfig writes the environment's administrator kubeconfig into a
// new temporary folder, for kubectl, and returns its path and a func that
// removes the folder.
func WriteKubeconfig(env *envtest.Environment) (string, func(), error) {
	dir, err := os.MkdirTemp("", "kubeconfig-")
	if err != nil {
		return "", nil, err
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, env.KubeConfig, 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, err
	}
	return path, func() { _ = os.RemoveAll(dir) }, nil
}

// InParallel calls f for 0..n-1 from the given number of workers and
// returns the errors f returned: what tests use to load an API server
// the way several clients at once do.
func InParallel(n, workers int, f func(i int) error) []error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

// CourseDrink returns the course's own Drink manifest, byte for byte as the
// course gives it (config/samples/course/example-drink.yaml).
func CourseDrink(t testing.TB) string {
	t.Helper()
	root, err := testutil.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "samples", "course", "example-drink.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

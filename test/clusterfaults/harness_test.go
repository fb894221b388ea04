package clusterfaults

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/example/myoperator/test/bench"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/framework/testutil"
)

// managerBinaryEnv names a manager binary to run instead of building the
// checkout's: how a test is shown to fail with a protection removed in a
// copy of the tree, without editing the shared one.
const managerBinaryEnv = "CLUSTERFAULTS_MANAGER"

// plane is one control plane of the test's own and what a manager process
// needs to run against it.
type plane struct {
	cp   *bench.ControlPlane
	dir  string
	opts bench.ManagerOptions
}

// startPlane builds the manager (or takes $CLUSTERFAULTS_MANAGER), starts
// kube-apiserver and etcd with config/local installed as install-local
// does, and picks the manager's loopback ports.
func startPlane(ctx context.Context, t *testing.T, po bench.PlaneOptions, leaderElect bool) *plane {
	t.Helper()
	// envtest logs through controller-runtime; the test reports on its own.
	ctrllog.SetLogger(logr.Discard())
	root, err := testutil.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := testenv.ManagerBinary(t, managerBinaryEnv)
	cp, err := bench.StartControlPlaneWith(ctx, root, dir, po)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	return &plane{cp: cp, dir: dir, opts: bench.ManagerOptions{
		Binary: bin, Kubeconfig: cp.Kubeconfig, LogFile: filepath.Join(dir, "manager.log"),
		MetricsPort: testutil.FreePort(t), ProbePort: testutil.FreePort(t), PprofPort: testutil.FreePort(t),
		MaxConcurrentReconciles: 16, // main's default
		LeaderElect:             leaderElect,
	}}
}

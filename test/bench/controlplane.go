package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/example/myoperator/bootstrap"
	"github.com/example/myoperator/internal/scheme"
	"github.com/example/myoperator/test/framework/testenv"
)

// OperatorNamespace is where config/local puts the operator's Secret and
// where its Lease lives.
const OperatorNamespace = "myoperator-system"

// ControlPlane is one fresh kube-apiserver + etcd with the operator's CRDs
// and webhook configurations installed as `make install-local` does. Every
// phase that must not see the objects of another gets its own: without a
// kube-controller-manager nothing deletes them, and a manager would cache
// and reconcile them.
type ControlPlane struct {
	env *envtest.Environment
	// Config is the administrator's, without client-side rate limits: the
	// API server's fairness is the only limit, as in the manager.
	Config     *rest.Config
	Kubeconfig string
	Client     client.WithWatch
	Clientset  *kubernetes.Clientset
}

// StartControlPlane starts the API server and installs config/local with
// kubectl, like install-local. workDir receives the kubeconfig.
func StartControlPlane(ctx context.Context, root, workDir string) (*ControlPlane, error) {
	return startControlPlane(ctx, root, workDir, &envtest.Environment{})
}

// PlaneOptions change how StartControlPlaneWith runs the control plane.
type PlaneOptions struct {
	// Restartable keeps etcd's data and the API server's certificates in
	// workDir rather than in directories envtest deletes when it stops
	// them, so that StopServers and StartServers take the control plane
	// down and bring it back with the same objects, ports and
	// certificates: to its clients it is one API server that was
	// unreachable for a while.
	Restartable bool
	// AuditPolicy, when set, is an audit policy (YAML) the API server
	// applies, writing one JSON event per line to workDir/audit.log.
	AuditPolicy string
	// FeatureGates, when set, is the API server's --feature-gates.
	FeatureGates string
	// EtcdQuotaBytes, when set, is etcd's --quota-backend-bytes (its
	// default, 2 GiB, holds about 200,000 Drinks with their ConfigMaps
	// and history only until compaction falls behind).
	EtcdQuotaBytes int64
}

// AuditLog is where a control plane with PlaneOptions.AuditPolicy writes.
func AuditLog(workDir string) string { return filepath.Join(workDir, "audit.log") }

// StartControlPlaneWith is StartControlPlane with options.
func StartControlPlaneWith(ctx context.Context, root, workDir string, o PlaneOptions) (*ControlPlane, error) {
	env := &envtest.Environment{}
	if o.Restartable {
		env.ControlPlane.Etcd = &envtest.Etcd{DataDir: filepath.Join(workDir, "etcd")}
		env.ControlPlane.APIServer = &envtest.APIServer{CertDir: filepath.Join(workDir, "apiserver")}
		for _, dir := range []string{env.ControlPlane.Etcd.DataDir, env.ControlPlane.APIServer.CertDir} {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, err
			}
		}
	}
	if o.AuditPolicy != "" {
		policy := filepath.Join(workDir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(o.AuditPolicy), 0o600); err != nil {
			return nil, err
		}
		args := env.ControlPlane.GetAPIServer().Configure()
		args.Set("audit-policy-file", policy)
		args.Set("audit-log-path", AuditLog(workDir))
		// One file, never rotated (the default rotates at 100 MB): the
		// replay reads the whole run.
		args.Set("audit-log-maxsize", "1000000")
	}
	if o.FeatureGates != "" {
		env.ControlPlane.GetAPIServer().Configure().Set("feature-gates", o.FeatureGates)
	}
	if o.EtcdQuotaBytes > 0 {
		if env.ControlPlane.Etcd == nil {
			env.ControlPlane.Etcd = &envtest.Etcd{}
		}
		env.ControlPlane.Etcd.Configure().Set("quota-backend-bytes", strconv.FormatInt(o.EtcdQuotaBytes, 10))
	}
	return startControlPlane(ctx, root, workDir, env)
}

func startControlPlane(ctx context.Context, root, workDir string, env *envtest.Environment) (*ControlPlane, error) {
	binDir, err := testenv.BinaryDir()
	if err != nil {
		return nil, err
	}
	env.BinaryAssetsDirectory, env.Scheme = binDir, scheme.New()
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting the API server: %w", err)
	}
	cp := &ControlPlane{env: env, Config: rest.CopyConfig(cfg)}
	cp.Config.QPS, cp.Config.Burst = -1, 0
	cp.Config.UserAgent = "myoperator-bench"
	if err := cp.setUp(ctx, root, workDir); err != nil {
		cp.Stop()
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) setUp(ctx context.Context, root, workDir string) error {
	cp.Kubeconfig = filepath.Join(workDir, "kubeconfig")
	if err := os.WriteFile(cp.Kubeconfig, cp.env.KubeConfig, 0o600); err != nil {
		return err
	}
	var err error
	if cp.Client, err = client.NewWithWatch(cp.Config, client.Options{Scheme: scheme.New()}); err != nil {
		return err
	}
	if cp.Clientset, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return err
	}
	var out bytes.Buffer
	apply := exec.CommandContext(ctx, "kubectl", "--kubeconfig", cp.Kubeconfig, "apply", "--server-side", "-k", filepath.Join(root, "config", "local"))
	apply.Stdout, apply.Stderr = &out, &out
	if err := apply.Run(); err != nil {
		return fmt.Errorf("kubectl apply -k config/local: %w\n%s", err, out.String())
	}
	out.Reset()
	wait := exec.CommandContext(ctx, "kubectl", "--kubeconfig", cp.Kubeconfig, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/drinks.example.com", "crd/operatorconfigs.operator.example.com")
	wait.Stdout, wait.Stderr = &out, &out
	if err := wait.Run(); err != nil {
		return fmt.Errorf("waiting for the CRDs: %w\n%s", err, out.String())
	}
	// The bootstrap initContainer creates this object in a real install.
	return cp.Client.Create(ctx, bootstrap.DefaultConfig())
}

// CreateNamespace creates a namespace for one phase's objects.
func (cp *ControlPlane) CreateNamespace(ctx context.Context, name string) error {
	return cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// APIMetrics scrapes the API server's /metrics as the administrator.
func (cp *ControlPlane) APIMetrics(ctx context.Context) (Metrics, error) {
	return cp.SaveAPIMetrics(ctx, "")
}

// SaveAPIMetrics is APIMetrics that also writes the scrape to path (none
// when empty), to be read after the run with what the record does not
// keep.
func (cp *ControlPlane) SaveAPIMetrics(ctx context.Context, path string) (Metrics, error) {
	raw, err := cp.Clientset.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scraping the API server's metrics: %w", err)
	}
	if path != "" {
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			return nil, err
		}
	}
	return ParseMetrics(string(raw))
}

// StopServers stops kube-apiserver, then etcd (SIGTERM, as a node drain or
// a control-plane upgrade does). Their data survives only in a control
// plane started with PlaneOptions.Restartable.
func (cp *ControlPlane) StopServers() error {
	if err := cp.env.ControlPlane.APIServer.Stop(); err != nil {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	if err := cp.env.ControlPlane.Etcd.Stop(); err != nil {
		return fmt.Errorf("stopping etcd: %w", err)
	}
	return nil
}

// StartServers starts etcd, then kube-apiserver, on the ports and with the
// data and certificates they had, and returns once the API server answers
// /healthz.
func (cp *ControlPlane) StartServers() error {
	if err := cp.env.ControlPlane.Etcd.Start(); err != nil {
		return fmt.Errorf("restarting etcd: %w", err)
	}
	if err := cp.env.ControlPlane.APIServer.Start(); err != nil {
		return fmt.Errorf("restarting kube-apiserver: %w", err)
	}
	return nil
}

// Stop stops the API server and etcd and removes their data.
func (cp *ControlPlane) Stop() {
	_ = cp.env.Stop()
}

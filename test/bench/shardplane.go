package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/test/framework/manifests"
	"github.com/example/myoperator/test/framework/shardaudit"
)

// serviceAccount is the operator's, as config/rbac names it.
const serviceAccount = "myoperator-controller-manager"

// shardPlane chooses what startShardPlane sets up.
type shardPlane struct {
	// Gate turns kube-apiserver's ShardedListAndWatch on; Audit writes the
	// audit log (AuditLog(dir)) that shardaudit reads; Fence installs
	// config/sharding's fence (an install without --shard-drinks has none).
	Gate, Audit, Fence bool
	// FenceIdle installs the fence with a match condition that is never
	// true, so that the API server calls it for no write: the replicas
	// run as with the fence, its webhook configuration and CA in place,
	// but what its calls cost is not paid. For measuring that cost
	// apart only: such replicas are not fenced.
	FenceIdle bool
	// DirectWebhooks leaves the bench's webhook Service out: the first
	// replica serves the webhooks on WebhookPort itself and no other
	// replica gets a call (for one replica: what the Service costs).
	DirectWebhooks bool
}

// startShardPlane starts a control plane for replicas that run as in a
// real install: each as the operator's ServiceAccount with config/rbac's
// permissions and config/default's FlowSchemas, from a token bound to a Pod of its own (PodKubeconfig), so
// that the fence (config/sharding's webhook configuration, pointed at the
// first replica's webhook server on loopback) decides their writes and the
// audit log names the pod of each write.
func startShardPlane(ctx context.Context, cfg Config, dir string, p shardPlane) (*ControlPlane, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	opts := PlaneOptions{EtcdQuotaBytes: 8 << 30}
	if p.Audit {
		opts.AuditPolicy = shardaudit.Policy(OperatorNamespace)
	}
	if p.Gate {
		opts.FeatureGates = "ShardedListAndWatch=true"
	}
	cp, err := StartControlPlaneWith(ctx, cfg.Root, dir, opts)
	if err != nil {
		return nil, err
	}
	if err := installRBAC(ctx, cp); err != nil {
		cp.Stop()
		return nil, err
	}
	if p.Fence {
		if err := installFence(ctx, cp, p.FenceIdle); err != nil {
			cp.Stop()
			return nil, err
		}
	}
	return cp, nil
}

// installRBAC installs config/rbac (the ServiceAccount and its roles) and
// config/default's FlowSchemas: without them the fence's reads of the
// bucket Leases, made while the API server waits on the fence, queue in
// one priority level with the writes waiting on it, and time out.
func installRBAC(ctx context.Context, cp *ControlPlane) error {
	objs, err := manifests.Render("config/rbac")
	if err != nil {
		return err
	}
	all, err := manifests.Render("config/default")
	if err != nil {
		return err
	}
	objs = append(objs, manifests.OfKind(all, "FlowSchema")...)
	for _, o := range objs {
		if err := cp.Client.Create(ctx, o); err != nil {
			return fmt.Errorf("installing %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// installFence installs config/sharding's fence, whose webhooks then call
// https://localhost:9443 as config/local's do; idle ones are never called
// (shardPlane.FenceIdle).
func installFence(ctx context.Context, cp *ControlPlane, idle bool) error {
	objs, err := manifests.RenderWithComponents("config/default", "config/sharding")
	if err != nil {
		return err
	}
	for _, o := range objs {
		if o.GetKind() != "ValidatingWebhookConfiguration" || o.GetName() != names.ShardFenceWebhookConfig {
			continue
		}
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.UnstructuredContent(), vwc); err != nil {
			return err
		}
		for i := range vwc.Webhooks {
			w := &vwc.Webhooks[i]
			path := ptr.Deref(w.ClientConfig.Service.Path, "/")
			w.ClientConfig.Service = nil
			w.ClientConfig.URL = ptr.To(fmt.Sprintf("https://localhost:%d%s", WebhookPort, path))
			if idle {
				w.MatchConditions = append(w.MatchConditions, admissionregistrationv1.MatchCondition{Name: "bench-fence-idle", Expression: "false"})
			}
		}
		// The first replica's certificate rotator injects the CA.
		return cp.Client.Create(ctx, vwc)
	}
	return fmt.Errorf("config/sharding renders no ValidatingWebhookConfiguration %s", names.ShardFenceWebhookConfig)
}

// PodKubeconfig creates the Pod object of a replica called name (no kubelet
// runs it) and writes into dir a kubeconfig with a day's token of the
// operator's ServiceAccount bound to it: the API server then adds the
// pod's name to each request's user, as for a replica in a cluster.
func (cp *ControlPlane) PodKubeconfig(ctx context.Context, dir, name string) (string, error) {
	pod, err := cp.Clientset.CoreV1().Pods(OperatorNamespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		// The namespace enforces Pod Security restricted, as installed.
		Spec: corev1.PodSpec{ServiceAccountName: serviceAccount,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "manager", Image: "controller:latest",
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	day := int64(24 * 3600)
	tr, err := cp.Clientset.CoreV1().ServiceAccounts(OperatorNamespace).CreateToken(ctx, serviceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &day,
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["bench"] = &clientcmdapi.Cluster{Server: cp.Config.Host, CertificateAuthorityData: cp.Config.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: name}
	kc.CurrentContext = name
	path := filepath.Join(dir, name+".kubeconfig")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return path, clientcmd.WriteToFile(*kc, path)
}

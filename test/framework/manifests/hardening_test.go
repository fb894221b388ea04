package manifests_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/myoperator/test/framework/manifests"
	"github.com/example/myoperator/test/framework/testenv"
)

// managerDeployment returns the one Deployment that objs hold.
func managerDeployment(t *testing.T, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	deps := manifests.OfKind(objs, "Deployment")
	if len(deps) != 1 {
		t.Fatalf("%d Deployments rendered, want 1", len(deps))
	}
	d := &appsv1.Deployment{}
	convert(t, deps[0], d)
	return d
}

func convert(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

func selector(t *testing.T, sel *metav1.LabelSelector) labels.Selector {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// selects says whether sel names pods with these labels; an empty
// selector (every pod of the namespace) does not count.
func selects(t *testing.T, sel *metav1.LabelSelector, set map[string]string) bool {
	t.Helper()
	s := selector(t, sel)
	return !s.Empty() && s.Matches(labels.Set(set))
}

// TestPodDisruptionBudget: config/default keeps one manager replica through
// voluntary disruptions, and still lets a drain evict the other.
func TestPodDisruptionBudget(t *testing.T) {
	objs, err := manifests.Render("config/default")
	if err != nil {
		t.Fatal(err)
	}
	d := managerDeployment(t, objs)
	pdbs := manifests.OfKind(objs, "PodDisruptionBudget")
	if len(pdbs) != 1 {
		t.Fatalf("config/default renders %d PodDisruptionBudgets, want 1", len(pdbs))
	}
	pdb := &policyv1.PodDisruptionBudget{}
	convert(t, pdbs[0], pdb)
	if pdb.Namespace != d.Namespace || !selects(t, pdb.Spec.Selector, d.Spec.Template.Labels) {
		t.Errorf("PodDisruptionBudget %s/%s (selector %v) does not select the manager pods %s/%v",
			pdb.Namespace, pdb.Name, pdb.Spec.Selector, d.Namespace, d.Spec.Template.Labels)
	}
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 || pdb.Spec.MaxUnavailable != nil {
		t.Errorf("PodDisruptionBudget: minAvailable %v, maxUnavailable %v; want minAvailable 1 only", pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas <= 1 {
		t.Errorf("%v replicas: a drain could never evict a manager pod with minAvailable 1", d.Spec.Replicas)
	}
}

// source is where a connection to a manager pod comes from: a pod in a
// namespace with these labels, or (namespace nil) something outside every
// namespace, such as an API server on the host network.
type source struct {
	name            string
	namespace       string
	namespaceLabels map[string]string
}

var (
	apiServer  = source{name: "the API server (host network)"}
	labelledNS = source{name: "a pod in the namespace monitoring", namespace: "monitoring", namespaceLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}
	// A tenant who labels its own namespace as the old policy asked.
	selfLabelled = source{name: "a pod in a tenant namespace labelled metrics=enabled", namespace: "tenant",
		namespaceLabels: map[string]string{"kubernetes.io/metadata.name": "tenant", "metrics": "enabled"}}
	unlabelledNS  = source{name: "a pod in an unlabelled namespace", namespace: "tenant", namespaceLabels: map[string]string{}}
	operatorNSPod = source{name: "a pod in the operator's namespace", namespace: "myoperator-system", namespaceLabels: map[string]string{"kubernetes.io/metadata.name": "myoperator-system"}}
)

// TestNetworkPolicyComponent renders config/default with the optional
// config/network-policy component and evaluates its policies as a network
// plugin would for a manager pod: the webhook port open to anyone, the
// metrics port only to the namespace named monitoring (not to one a tenant
// labels), nothing else. config/default alone carries no NetworkPolicy (nothing here enforces
// one, and a cluster whose plugin ignores them gains nothing).
func TestNetworkPolicyComponent(t *testing.T) {
	plain, err := manifests.Render("config/default")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(manifests.OfKind(plain, "NetworkPolicy")); n != 0 {
		t.Errorf("config/default renders %d NetworkPolicies; they belong to the optional component", n)
	}
	objs, err := manifests.RenderWithComponents("config/default", "config/network-policy")
	if err != nil {
		t.Fatal(err)
	}
	d := managerDeployment(t, objs)
	var policies []networkingv1.NetworkPolicy
	for _, u := range manifests.OfKind(objs, "NetworkPolicy") {
		p := networkingv1.NetworkPolicy{}
		convert(t, u, &p)
		if p.Namespace != d.Namespace {
			// The Guestbook's pods are fenced by the operator, beside
			// them (reconcile's TestGuestbookNetworkPolicy).
			t.Errorf("the component adds NetworkPolicy %s/%s outside the manager's namespace", p.Namespace, p.Name)
			continue
		}
		if !selects(t, &p.Spec.PodSelector, d.Spec.Template.Labels) {
			t.Errorf("NetworkPolicy %s/%s does not select the manager pods", p.Namespace, p.Name)
		}
		policies = append(policies, p)
	}
	if len(policies) != 2 {
		t.Fatalf("the component adds %d NetworkPolicies, want 2 (webhook, metrics)", len(policies))
	}
	ports := containerPorts(t, d)
	cases := []struct {
		from  source
		port  string
		allow bool
	}{
		{apiServer, "webhook", true},
		{labelledNS, "webhook", true},
		{unlabelledNS, "webhook", true},
		{labelledNS, "metrics", true},
		{apiServer, "metrics", false},
		{unlabelledNS, "metrics", false},
		{selfLabelled, "metrics", false},
		{operatorNSPod, "metrics", false},
		// The kubelet probes from the pod's own node, which NetworkPolicy
		// always lets through; nobody else needs the probe port.
		{unlabelledNS, "probes", false},
		{labelledNS, "probes", false},
	}
	for _, c := range cases {
		port, ok := ports[c.port]
		if !ok {
			t.Fatalf("the manager container has no port named %s", c.port)
		}
		if got := allowed(t, policies, d, c.from, port); got != c.allow {
			t.Errorf("%s -> %s port %d: allowed %v, want %v", c.from.name, c.port, port.ContainerPort, got, c.allow)
		}
	}
}

// containerPorts maps the manager container's port names to its ports.
func containerPorts(t *testing.T, d *appsv1.Deployment) map[string]corev1.ContainerPort {
	t.Helper()
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "manager" {
			out := map[string]corev1.ContainerPort{}
			for _, p := range c.Ports {
				out[p.Name] = p
			}
			return out
		}
	}
	t.Fatal("no manager container")
	return nil
}

// allowed says whether the policies let a TCP connection from src reach
// port of a manager pod: isolated for ingress once a policy selects it,
// then allowed when any rule matches both port and peer.
func allowed(t *testing.T, policies []networkingv1.NetworkPolicy, d *appsv1.Deployment, src source, port corev1.ContainerPort) bool {
	t.Helper()
	isolated := false
	for _, p := range policies {
		if p.Namespace != d.Namespace || !selector(t, &p.Spec.PodSelector).Matches(labels.Set(d.Spec.Template.Labels)) {
			continue
		}
		isolated = true
		for _, r := range p.Spec.Ingress {
			if portMatches(r.Ports, port) && peerMatches(t, r.From, p.Namespace, src) {
				return true
			}
		}
	}
	return !isolated
}

func portMatches(ports []networkingv1.NetworkPolicyPort, port corev1.ContainerPort) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		tcp := p.Protocol == nil || *p.Protocol == corev1.ProtocolTCP
		if tcp && p.Port != nil && (p.Port.IntValue() == int(port.ContainerPort) || p.Port.String() == port.Name) {
			return true
		}
	}
	return false
}

func peerMatches(t *testing.T, peers []networkingv1.NetworkPolicyPeer, policyNS string, src source) bool {
	t.Helper()
	if len(peers) == 0 {
		return true
	}
	for _, p := range peers {
		if p.IPBlock != nil {
			t.Fatalf("ipBlock peers are not evaluated here: %v", p.IPBlock)
		}
		if src.namespaceLabels == nil {
			continue // not a pod: only an empty peer list admits it
		}
		nsOK := src.namespace == policyNS
		if p.NamespaceSelector != nil {
			nsOK = selector(t, p.NamespaceSelector).Matches(labels.Set(src.namespaceLabels))
		}
		// The sources here are any pod of their namespace, so only a peer
		// without a pod selector (or an empty one) admits them.
		if nsOK && (p.PodSelector == nil || selector(t, p.PodSelector).Empty()) {
			return true
		}
	}
	return false
}

// TestNetworkPolicyComponentServerSideDryRun: the project-built API server
// accepts every object the component adds (a dry run, since nothing here
// enforces NetworkPolicy).
func TestNetworkPolicyComponentServerSideDryRun(t *testing.T) {
	_, _, c := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	for _, ns := range []string{"myoperator-system", "guestbook"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := manifests.Render("config/network-policy")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) == 0 {
		t.Fatal("config/network-policy renders nothing")
	}
	for _, o := range objs {
		if err := c.Create(ctx, o, client.DryRunAll); err != nil {
			t.Errorf("%s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

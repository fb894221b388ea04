package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/myoperator/test/framework/manifests"
	"github.com/example/myoperator/test/framework/testenv"
)

// managerSA is the manager's ServiceAccount as the API server authenticates
// it.
const managerSA = "system:serviceaccount:myoperator-system:myoperator-controller-manager"

// TestRBACTable asks the API server (SubjectAccessReview, the authorizer
// the cluster really uses) what the manager's ServiceAccount may do with
// the RBAC of config/rbac installed: every right it needs, and the rights an
// operator must not hold (docs/SECURITY.md explains each).
func TestRBACTable(t *testing.T) {
	_, _, admin := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	for _, ns := range []string{operatorNS, "guestbook", "team-b"} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	installRBAC(ctx, t, admin)
	type q struct {
		verb, group, resource, ns, name string
		allowed                         bool
	}
	table := []q{
		// What it does everywhere: Drinks and their ConfigMaps.
		{"watch", "example.com", "drinks", "", "", true},
		{"patch", "example.com", "drinks", "team-b", "", true},
		{"patch", "example.com", "drinks/status", "team-b", "", true},
		{"create", "", "configmaps", "team-b", "", true},
		{"patch", "", "configmaps", "team-b", "", true},
		{"list", "", "configmaps", "", "", true},
		{"create", "events.k8s.io", "events", "team-b", "", true},
		{"watch", "webapp.my.domain", "guestbooks", "", "", true},
		{"patch", "operator.example.com", "operatorconfigs/status", "", "cluster", true},
		// Guestbook operands, in the operand namespace only.
		{"create", "apps", "statefulsets", "guestbook", "", true},
		{"patch", "", "services", "guestbook", "", true},
		{"patch", "", "pods", "guestbook", "", true},
		{"list", "", "pods", "guestbook", "", true},
		{"delete", "", "configmaps", "guestbook", "", true},
		{"patch", "networking.k8s.io", "networkpolicies", "guestbook", "", true},
		// Its own namespace: the certificate Secret and the Lease.
		{"update", "", "secrets", operatorNS, "myoperator-webhook-server-cert", true},
		{"update", "coordination.k8s.io", "leases", operatorNS, "myoperator.example.com", true},
		// CA injection, limited by name to its own objects.
		{"patch", "apiextensions.k8s.io", "customresourcedefinitions", "", "drinks.example.com", true},
		{"patch", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "", "myoperator-validating-webhook-configuration", true},
		{"create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", true},

		// What it must not do.
		{"patch", "", "pods", "kube-system", "", false},
		{"patch", "", "pods", "team-b", "", false},
		{"create", "apps", "statefulsets", "default", "", false},
		{"create", "networking.k8s.io", "networkpolicies", "team-b", "", false},
		{"delete", "networking.k8s.io", "networkpolicies", "myoperator-system", "", false},
		{"delete", "apps", "deployments", "guestbook", "", false},
		{"update", "", "services", "kube-system", "", false},
		{"delete", "", "configmaps", "team-b", "", false},
		{"delete", "", "configmaps", "", "", false},
		{"get", "", "secrets", "kube-system", "", false},
		{"list", "", "secrets", "", "", false},
		// In its own namespace it reads and writes its certificate Secret
		// only (list and watch stay namespace-wide for the rotator's cache;
		// TestRBACCertManagerMode narrows them).
		{"get", "", "secrets", operatorNS, "myoperator-ca", false},
		{"update", "", "secrets", operatorNS, "myoperator-ca", false},
		{"create", "", "namespaces", "", "", false},
		{"create", "apiextensions.k8s.io", "customresourcedefinitions", "", "", false},
		{"patch", "apiextensions.k8s.io", "customresourcedefinitions", "", "things.example.org", false},
		{"patch", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "", "someone-elses-webhook", false},
		{"delete", "example.com", "drinks", "team-b", "", false},
		{"delete", "webapp.my.domain", "guestbooks", "", "", false},
		{"update", "operator.example.com", "operatorconfigs", "", "cluster", false},
		// The bootstrap's release step patches cluster, and only cluster.
		{"patch", "operator.example.com", "operatorconfigs", "", "cluster", true},
		{"patch", "operator.example.com", "operatorconfigs", "", "other", false},
		{"delete", "operator.example.com", "operatorconfigs", "", "cluster", false},
		{"create", "rbac.authorization.k8s.io", "rolebindings", "team-b", "", false},
		{"escalate", "rbac.authorization.k8s.io", "clusterroles", "", "", false},
		{"impersonate", "", "serviceaccounts", "", "", false},
		{"create", "", "pods/exec", "guestbook", "", false},
		{"update", "coordination.k8s.io", "leases", "kube-system", "", false},
	}
	for _, tt := range table {
		name := fmt.Sprintf("%s %s/%s ns=%q name=%q", tt.verb, tt.group, tt.resource, tt.ns, tt.name)
		t.Run(name, func(t *testing.T) {
			checkAccess(ctx, t, admin, authorizationv1.ResourceAttributes{
				Verb: tt.verb, Group: tt.group, Resource: tt.resource, Namespace: tt.ns, Name: tt.name,
			}, tt.allowed)
		})
	}
	t.Logf("%d questions asked", len(table))
}

// checkAccess asks the API server (SubjectAccessReview) whether the
// manager's ServiceAccount may do what attrs say (a subresource after a
// slash in Resource) and fails the test unless the answer is allowed.
func checkAccess(ctx context.Context, t *testing.T, admin client.Client, attrs authorizationv1.ResourceAttributes, allowed bool) {
	t.Helper()
	attrs.Resource, attrs.Subresource, _ = strings.Cut(attrs.Resource, "/")
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               managerSA,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + operatorNS, "system:authenticated"},
		ResourceAttributes: &attrs,
	}}
	// The authorizer learns of the roles and bindings just created
	// through its informers: a right that must exist may take a
	// moment to appear (a make ci once asked too early). The
	// refusals come after every right in the table has appeared.
	deadline := time.Now().Add(10 * time.Second)
	for {
		review := sar.DeepCopy()
		if err := admin.Create(ctx, review); err != nil {
			t.Fatal(err)
		}
		if review.Status.Allowed == allowed {
			return
		}
		if !allowed || time.Now().After(deadline) {
			t.Errorf("%+v: allowed=%v, want %v (%s)", attrs, review.Status.Allowed, allowed, review.Status.Reason)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// installRBAC installs config/rbac as kustomize renders it; the namespaces
// it binds roles in must exist.
func installRBAC(ctx context.Context, t *testing.T, admin client.Client) {
	t.Helper()
	rbac, err := manifests.Render("config/rbac")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range rbac {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("installing config/rbac %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

// TestRBACCertManagerMode: with config/certmanager (config/certmanager-default
// renders it), where cert-manager keeps its CA key in the operator's
// namespace, the ServiceAccount lists and watches its certificate Secret
// by name only, and cannot read the CA key.
func TestRBACCertManagerMode(t *testing.T) {
	_, _, admin := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	for _, ns := range []string{operatorNS, "guestbook"} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := manifests.Render("config/certmanager-default")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding":
			if err := admin.Create(ctx, o); err != nil {
				t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	}
	for _, tt := range []struct {
		verb, name string
		allowed    bool
	}{
		{"watch", "myoperator-webhook-server-cert", true},
		{"list", "myoperator-webhook-server-cert", true},
		{"list", "", false},
		{"watch", "", false},
		{"get", "myoperator-ca", false},
	} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:               managerSA,
				Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + operatorNS, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: tt.verb, Resource: "secrets", Namespace: operatorNS, Name: tt.name},
			}}
			if err := admin.Create(ctx, sar); err != nil {
				t.Fatal(err)
			}
			if sar.Status.Allowed == tt.allowed {
				break
			}
			if !tt.allowed || time.Now().After(deadline) {
				t.Errorf("%s secrets %q in %s: allowed=%v, want %v", tt.verb, tt.name, operatorNS, sar.Status.Allowed, tt.allowed)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/example/myoperator/test/framework/testenv"
)

// The namespaces and users of rolesForNamespaceUsers: users are only names
// the API server's authorizer is asked about (and kubectl impersonates).
const (
	rolesNS      = "e2e-roles"
	rolesOtherNS = "e2e-roles-other"
	rolesBinding = "e2e-roles-guestbooks"
)

// rolesForNamespaceUsers: config/rbac's myoperator-drinks-edit and -view
// aggregate, through the cluster's own aggregation controller, into the
// built-in admin, edit and view roles, so that a user bound to edit in one
// namespace may order Drinks there and nowhere else, and never write their
// status; Guestbooks are cluster-scoped and need the cluster admin's
// binding of myoperator-guestbooks-edit or -view.
func rolesForNamespaceUsers() features.Feature {
	type question struct {
		user, verb, resource, subresource, namespace string
		allowed                                      bool
	}
	table := []question{
		{"editor", "create", "drinks", "", rolesNS, true},
		{"editor", "delete", "drinks", "", rolesNS, true},
		{"editor", "update", "drinks", "status", rolesNS, false},
		{"editor", "create", "drinks", "", rolesOtherNS, false},
		{"editor", "list", "drinks", "", rolesOtherNS, false},
		{"editor", "create", "guestbooks", "", "", false},
		{"admin", "create", "drinks", "", rolesNS, true},
		{"admin", "deletecollection", "drinks", "", rolesNS, true},
		{"admin", "patch", "drinks", "status", rolesNS, false},
		{"viewer", "list", "drinks", "", rolesNS, true},
		{"viewer", "get", "drinks", "status", rolesNS, true},
		{"viewer", "create", "drinks", "", rolesNS, false},
		{"viewer", "list", "guestbooks", "", "", false},
		{"gb-admin", "create", "guestbooks", "", "", true},
		{"gb-admin", "update", "guestbooks", "status", "", false},
		{"gb-admin", "create", "drinks", "", rolesNS, false},
		{"gb-viewer", "list", "guestbooks", "", "", true},
		{"gb-viewer", "delete", "guestbooks", "", "", false},
	}
	ask := func(ctx context.Context, q question) (bool, error) {
		group := "example.com"
		if q.resource == "guestbooks" {
			group = "webapp.my.domain"
		}
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: q.user,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: q.namespace, Verb: q.verb, Group: group, Resource: q.resource, Subresource: q.subresource,
			},
		}}
		got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return got.Status.Allowed, nil
	}
	return features.New("roles for namespace users").WithLabel("area", "roles").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			manifest := fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: v1
kind: Namespace
metadata: {name: %[2]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: editor, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: editor}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: admin, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: admin}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: viewer, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: viewer}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: %[3]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: myoperator-guestbooks-edit}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: gb-admin}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: %[3]s-view}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: myoperator-guestbooks-view}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: gb-viewer}]
`, rolesNS, rolesOtherNS, rolesBinding)
			if out, err := apply(cfg, manifest); err != nil {
				t.Fatalf("kubectl apply: %v\n%s", err, out)
			}
			return ctx
		}).
		Assess("SubjectAccessReviews: Drinks in the bound namespace only, Guestbooks by the cluster admin's binding", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// The aggregation controller of kube-controller-manager copies
			// the rules into admin, edit and view a moment after install.
			testenv.Eventually(t, 60*time.Second, func() string {
				var wrong []string
				for _, q := range table {
					allowed, err := ask(ctx, q)
					if err != nil {
						return err.Error()
					}
					if allowed != q.allowed {
						wrong = append(wrong, fmt.Sprintf("%s %s %s/%s in %q: allowed=%v, want %v", q.user, q.verb, q.resource, q.subresource, q.namespace, allowed, q.allowed))
					}
				}
				return strings.Join(wrong, "\n")
			})
			t.Logf("%d SubjectAccessReviews answered as config/rbac says", len(table))
			return ctx
		}).
		Assess("the namespace editor orders a Drink with kubectl and it is rendered", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			drink := func(ns string) string {
				return "apiVersion: example.com/v1\nkind: Drink\nmetadata: {name: ordered, namespace: " + ns + "}\nspec: {displayName: Tea, beverage: tea}\n"
			}
			if out, err := apply(cfg, drink(rolesNS), "--as", "editor"); err != nil {
				t.Fatalf("kubectl apply --as editor: %v\n%s", err, out)
			}
			if out, err := apply(cfg, drink(rolesOtherNS), "--as", "editor"); err == nil || !strings.Contains(out, "forbidden") {
				t.Errorf("kubectl apply --as editor in %s: %v, want forbidden:\n%s", rolesOtherNS, err, out)
			}
			return conditionTrueWithin("drink", rolesNS, "ordered", "Ready", 30*time.Second)(ctx, t, cfg)
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cleanUp(t, cfg, "namespace", rolesNS, rolesOtherNS)
			cleanUp(t, cfg, "clusterrolebinding", rolesBinding, rolesBinding+"-view")
			return ctx
		}).
		Feature()
}

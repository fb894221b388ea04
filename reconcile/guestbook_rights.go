package reconcile

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webappv1 "github.com/example/myoperator/apis/webapp/v1"
)

// OperandsClusterRole is the ClusterRole that grants the operator its
// rights on Guestbook operands, bound by a RoleBinding in each operand
// namespace (config/rbac/guestbook_operands_role.yaml).
const OperandsClusterRole = "myoperator-guestbook-operands"

// rightsRecheck is how soon a Guestbook that waits for rights in its operand
// namespace looks again: a new RoleBinding wakes no watch of the operator.
const rightsRecheck = 10 * time.Second

// operandRights are the rights the Guestbook reconciler uses in an operand
// namespace; it asks for each before it works there.
var operandRights = []authorizationv1.ResourceAttributes{
	{Group: "apps", Resource: "statefulsets", Verb: "list"},
	{Group: "apps", Resource: "statefulsets", Verb: "watch"},
	{Group: "apps", Resource: "statefulsets", Verb: "create"},
	{Group: "apps", Resource: "statefulsets", Verb: "patch"},
	{Group: "apps", Resource: "statefulsets", Verb: "delete"},
	{Resource: "services", Verb: "list"},
	{Resource: "services", Verb: "watch"},
	{Resource: "services", Verb: "create"},
	{Resource: "services", Verb: "patch"},
	{Resource: "services", Verb: "delete"},
	{Group: "networking.k8s.io", Resource: "networkpolicies", Verb: "list"},
	{Group: "networking.k8s.io", Resource: "networkpolicies", Verb: "watch"},
	{Group: "networking.k8s.io", Resource: "networkpolicies", Verb: "create"},
	{Group: "networking.k8s.io", Resource: "networkpolicies", Verb: "patch"},
	{Group: "networking.k8s.io", Resource: "networkpolicies", Verb: "delete"},
	{Resource: "pods", Verb: "list"},
	{Resource: "pods", Verb: "watch"},
	{Resource: "pods", Verb: "patch"},
	{Resource: "configmaps", Verb: "get"},
	{Resource: "configmaps", Verb: "list"},
	{Resource: "configmaps", Verb: "watch"},
	{Resource: "configmaps", Verb: "create"},
	{Resource: "configmaps", Verb: "delete"},
}

// RightsError means the operator may not work in an operand namespace: the
// namespace is missing or the operator's ServiceAccount has no RoleBinding
// to OperandsClusterRole there. Only an admin can fix it; the message says
// exactly how.
type RightsError struct {
	Namespace      string
	Missing        []string
	NoNamespace    bool
	ServiceAccount string
}

func (e *RightsError) Error() string {
	sa := strings.SplitN(e.ServiceAccount, "/", 2)
	bind := fmt.Sprintf("kubectl create rolebinding %s -n %s --clusterrole=%s --serviceaccount=%s:%s",
		OperandsClusterRole, e.Namespace, OperandsClusterRole, sa[0], sa[len(sa)-1])
	if e.NoNamespace {
		return fmt.Sprintf("operand namespace %s does not exist, and the operator does not create namespaces: "+
			"create it with Pod Security restricted, marked as an operand namespace (kubectl create namespace %s; kubectl label namespace %s pod-security.kubernetes.io/enforce=restricted %s=true), "+
			"then grant the operator its rights there (%s); the operands stay where they are meanwhile",
			e.Namespace, e.Namespace, e.Namespace, webappv1.OperandNamespaceLabel, bind)
	}
	return fmt.Sprintf("the operator may not manage Guestbook operands in namespace %s (missing: %s): "+
		"bind ClusterRole %s to ServiceAccount %s there (%s); the operands stay where they are meanwhile",
		e.Namespace, strings.Join(e.Missing, ", "), OperandsClusterRole, e.ServiceAccount, bind)
}

// rightsCache remembers the namespaces where the operator found every right
// it needs, so that a converged Guestbook costs no request. A namespace
// where rights were missing is asked again at each recheck.
type rightsCache struct {
	mu      sync.Mutex
	granted map[string]bool
}

// check asks the API server, through SelfSubjectAccessReviews (which every
// authenticated user may create), whether the operator holds every operand
// right in ns; it reads the namespace once to tell a missing namespace from
// a missing binding.
func (rc *rightsCache) check(ctx context.Context, c client.Client, reader client.Reader, ns, serviceAccount string) error {
	rc.mu.Lock()
	ok := rc.granted[ns]
	rc.mu.Unlock()
	if ok {
		return nil
	}
	err := reader.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
	switch {
	case apierrors.IsNotFound(err):
		return &RightsError{Namespace: ns, NoNamespace: true, ServiceAccount: serviceAccount}
	case err != nil && !apierrors.IsForbidden(err):
		return err
	}
	var missing []string
	for _, attrs := range operandRights {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
		review.Spec.ResourceAttributes.Namespace = ns
		if err := c.Create(ctx, review); err != nil {
			return fmt.Errorf("asking the API server for the operator's rights in %s: %w", ns, err)
		}
		if !review.Status.Allowed {
			missing = append(missing, strings.TrimSuffix(attrs.Verb+" "+attrs.Resource+"."+attrs.Group, "."))
		}
	}
	if len(missing) > 0 {
		return &RightsError{Namespace: ns, Missing: missing, ServiceAccount: serviceAccount}
	}
	rc.mu.Lock()
	if rc.granted == nil {
		rc.granted = map[string]bool{}
	}
	rc.granted[ns] = true
	rc.mu.Unlock()
	return nil
}

// forget drops what was found for ns, so that a later move back asks again.
func (rc *rightsCache) forget(ns string) {
	rc.mu.Lock()
	delete(rc.granted, ns)
	rc.mu.Unlock()
}

package reconcile

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/internal/pause"
)

// ConditionReconciling is true while the operator waits for the operands to
// reach what the spec asks (kstatus reads it as InProgress).
const ConditionReconciling = "Reconciling"

// Reasons of a Guestbook's Ready and Reconciling conditions as its pods
// come up.
const (
	// ReasonNoActivePod: no pod is Ready, so none can be active.
	ReasonNoActivePod = "NoActivePod"
	// ReasonPodsNotReady: a pod is active, but not every pod is Ready.
	ReasonPodsNotReady = "PodsNotReady"
	// ReasonWaitingForPods is Reconciling's reason while either holds.
	ReasonWaitingForPods = "WaitingForPods"
	// ReasonActive: a pod is active and every pod is Ready.
	ReasonActive = "Active"
	// ReasonPodCannotRun: a pod of the Guestbook cannot run the template
	// (an image that cannot be pulled, a crash loop, no node for it); the
	// StatefulSet's rollout stops there until the template or the cluster
	// changes.
	ReasonPodCannotRun = "PodCannotRun"
)

// Reasons of a Guestbook's conditions when a step of its reconcile failed;
// each names the step. The reconcile is retried.
const (
	ReasonRightsCheckFailed    = "RightsCheckFailed"
	ReasonCacheFailed          = "CacheFailed"
	ReasonConfigMapFailed      = "ConfigMapFailed"
	ReasonStatefulSetFailed    = "StatefulSetFailed"
	ReasonServiceFailed        = "ServiceFailed"
	ReasonNetworkPolicyFailed  = "NetworkPolicyFailed"
	ReasonRoleAssignmentFailed = "RoleAssignmentFailed"
	ReasonCleanupFailed        = "CleanupFailed"
)

// Event reasons of the Guestbook reconciler. The conflict and drift events
// take their reason from the operand's kind (ConflictError.Reason,
// "<Kind>Corrected").
const (
	// ReasonFailover: a standby pod was promoted to active.
	ReasonFailover = "Failover"
	// ReasonOperandsMoved: the operands of the old operand namespace were
	// removed once those of the new one were Ready.
	ReasonOperandsMoved = "OperandsMoved"
)

// setGuestbookRoles reports the roles and whether the application runs as
// the current generation asks: one active pod and every pod Ready.
func setGuestbookRoles(g *webappv1.Guestbook, r roles) {
	g.Status.ObservedGeneration = g.Generation
	g.Status.Active = r.active
	g.Status.Standby = r.standby
	if setGuestbookStuck(g, r) {
		return
	}
	switch {
	case r.active == "":
		msg := fmt.Sprintf("no Ready pod to make active (%d of %d pods Ready)", r.ready, g.Spec.Size)
		setCondition(&g.Status.Conditions, g.Generation, webappv1.ConditionReady, metav1.ConditionFalse, ReasonNoActivePod, msg)
		setCondition(&g.Status.Conditions, g.Generation, ConditionReconciling, metav1.ConditionTrue, ReasonWaitingForPods, msg)
	case !r.complete(g.Spec.Size):
		msg := fmt.Sprintf("pod %s is active; %d of %d pods Ready", r.active, r.ready, g.Spec.Size)
		setCondition(&g.Status.Conditions, g.Generation, webappv1.ConditionReady, metav1.ConditionFalse, ReasonPodsNotReady, msg)
		setCondition(&g.Status.Conditions, g.Generation, ConditionReconciling, metav1.ConditionTrue, ReasonWaitingForPods, msg)
	default:
		msg := fmt.Sprintf("pod %s is active, %d standby", r.active, len(r.standby))
		setCondition(&g.Status.Conditions, g.Generation, webappv1.ConditionReady, metav1.ConditionTrue, ReasonActive, msg)
		meta.RemoveStatusCondition(&g.Status.Conditions, ConditionReconciling)
	}
}

// setGuestbookStuck reports a pod that cannot run the template, and says
// whether there is one: Ready=False and Stalled (kstatus Failed: it takes a
// change of the image, the cluster or the registry), naming the pod, its
// waiting reason and the image, and which pod still serves. Without one,
// Stalled goes.
func setGuestbookStuck(g *webappv1.Guestbook, r roles) bool {
	if !r.hasStuck {
		meta.RemoveStatusCondition(&g.Status.Conditions, ConditionStalled)
		return false
	}
	serving := "no pod is Ready to serve"
	if r.active != "" {
		serving = fmt.Sprintf("pod %s is active and serves, %d standby", r.active, len(r.standby))
	}
	msg := fmt.Sprintf("%s; %s; %d of %d pods Ready", r.stuck, serving, r.ready, g.Spec.Size)
	setCondition(&g.Status.Conditions, g.Generation, webappv1.ConditionReady, metav1.ConditionFalse, ReasonPodCannotRun, msg)
	setCondition(&g.Status.Conditions, g.Generation, ConditionStalled, metav1.ConditionTrue, ReasonPodCannotRun, msg)
	meta.RemoveStatusCondition(&g.Status.Conditions, ConditionReconciling)
	return true
}

// setGuestbookUnmanaged: the OperatorConfig says to leave operands alone.
func setGuestbookUnmanaged(g *webappv1.Guestbook) {
	g.Status.ObservedGeneration = g.Generation
	setCondition(&g.Status.Conditions, g.Generation, webappv1.ConditionReady, metav1.ConditionFalse, ReasonUnmanaged,
		"OperatorConfig cluster has managementState Unmanaged: the operator leaves this Guestbook's operands alone; set Managed to resume")
	meta.RemoveStatusCondition(&g.Status.Conditions, ConditionReconciling)
	meta.RemoveStatusCondition(&g.Status.Conditions, ConditionStalled)
}

// setGuestbookPaused: the Guestbook asks the operator to leave it and its
// operands alone, failover included. Only the first reconcile after the
// pause writes the status; while paused, nothing is written.
func setGuestbookPaused(g, read *webappv1.Guestbook) {
	if meta.IsStatusConditionTrue(read.Status.Conditions, pause.ConditionType) {
		g.Status = *read.Status.DeepCopy()
		return
	}
	msg := pause.Message("guestbook", g.Name, "this Guestbook's operands (no drift correction, no failover) or status")
	setCondition(&g.Status.Conditions, g.Generation, pause.ConditionType, metav1.ConditionTrue, pause.Reason, msg)
	setCondition(&g.Status.Conditions, g.Generation, webappv1.ConditionReady, metav1.ConditionFalse, pause.Reason, msg)
	meta.RemoveStatusCondition(&g.Status.Conditions, ConditionReconciling)
	meta.RemoveStatusCondition(&g.Status.Conditions, ConditionStalled)
}

// setGuestbookConflict: an operand's name is taken by an object the
// Guestbook does not control. Only someone else can free it (kstatus
// Stalled); the reconciler rechecks until then.
func setGuestbookConflict(g *webappv1.Guestbook, c *ConflictError) {
	g.Status.ObservedGeneration = g.Generation
	setCondition(&g.Status.Conditions, g.Generation, webappv1.ConditionReady, metav1.ConditionFalse, c.Reason(), c.Error())
	setCondition(&g.Status.Conditions, g.Generation, ConditionStalled, metav1.ConditionTrue, c.Reason(), c.Error())
	meta.RemoveStatusCondition(&g.Status.Conditions, ConditionReconciling)
}

// setGuestbookFailed: a write failed; the reconcile is retried. A conflict
// is only a stale read: the retry resolves it, so status does not show it.
func setGuestbookFailed(g *webappv1.Guestbook, reason string, err error) {
	if apierrors.IsConflict(err) {
		return
	}
	setCondition(&g.Status.Conditions, g.Generation, webappv1.ConditionReady, metav1.ConditionFalse, reason, err.Error())
	setCondition(&g.Status.Conditions, g.Generation, ConditionReconciling, metav1.ConditionTrue, reason, "retrying")
	meta.RemoveStatusCondition(&g.Status.Conditions, ConditionStalled)
}

// ReasonOperandNamespaceForbidden means the operator may not work in the operand
// namespace (missing, or no RoleBinding for the operator there).
const ReasonOperandNamespaceForbidden = "OperandNamespaceForbidden"

// setGuestbookForbidden: the operand namespace lacks the operator's rights
// or does not exist. Only an admin can fix it (kstatus Stalled); the message
// says how, and the operands stay where they run.
func setGuestbookForbidden(g *webappv1.Guestbook, e *RightsError) {
	g.Status.ObservedGeneration = g.Generation
	setCondition(&g.Status.Conditions, g.Generation, webappv1.ConditionReady, metav1.ConditionFalse, ReasonOperandNamespaceForbidden, e.Error())
	setCondition(&g.Status.Conditions, g.Generation, ConditionStalled, metav1.ConditionTrue, ReasonOperandNamespaceForbidden, e.Error())
	meta.RemoveStatusCondition(&g.Status.Conditions, ConditionReconciling)
}

package reconcile

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/pause"
)

// Condition types beside Ready, after the kstatus conventions: Stalled is
// true when the operator cannot make progress without a change by the user.
const (
	ConditionStalled = "Stalled"
)

// Reasons a user can act on.
const (
	ReasonConfigMapReady         = "ConfigMapReady"
	ReasonUnmanaged              = "Unmanaged"
	ReasonUnknownAuthoredVersion = "UnknownAuthoredVersion"
	ReasonApplyFailed            = "ApplyFailed"
)

// setDrinkReady: the ConfigMap matches the current generation, in the
// layout named layout.
func setDrinkReady(d *drinksv1.Drink, layout string) {
	d.Status.ObservedGeneration = d.Generation
	setCondition(&d.Status.Conditions, d.Generation, drinksv1.ConditionReady, metav1.ConditionTrue, ReasonConfigMapReady,
		"ConfigMap "+d.Name+" holds the "+layout+" layout of the current spec")
	meta.RemoveStatusCondition(&d.Status.Conditions, ConditionStalled)
}

// setDrinkUnmanaged: the OperatorConfig says to leave operands alone.
func setDrinkUnmanaged(d *drinksv1.Drink) {
	d.Status.ObservedGeneration = d.Generation
	setCondition(&d.Status.Conditions, d.Generation, drinksv1.ConditionReady, metav1.ConditionFalse, ReasonUnmanaged,
		"OperatorConfig cluster has managementState Unmanaged: the operator leaves this Drink's ConfigMap alone; set Managed to resume")
	meta.RemoveStatusCondition(&d.Status.Conditions, ConditionStalled)
}

// setDrinkPaused: the Drink asks the operator to leave it alone. Only the
// first reconcile after the pause writes the status (the Paused condition,
// Ready=False); while paused, nothing is written, not even a newer
// observedGeneration after a spec change.
func setDrinkPaused(d, read *drinksv1.Drink) {
	if meta.IsStatusConditionTrue(read.Status.Conditions, pause.ConditionType) {
		d.Status = *read.Status.DeepCopy()
		return
	}
	msg := pause.Message("drink", d.Name, "this Drink's ConfigMap or status")
	setCondition(&d.Status.Conditions, d.Generation, pause.ConditionType, metav1.ConditionTrue, pause.Reason, msg)
	setCondition(&d.Status.Conditions, d.Generation, drinksv1.ConditionReady, metav1.ConditionFalse, pause.Reason, msg)
	meta.RemoveStatusCondition(&d.Status.Conditions, ConditionStalled)
}

// setDrinkStalled: no layout for the authored version; only a write of the
// spec can fix it.
func setDrinkStalled(d *drinksv1.Drink, err error) {
	d.Status.ObservedGeneration = d.Generation
	setCondition(&d.Status.Conditions, d.Generation, drinksv1.ConditionReady, metav1.ConditionFalse, ReasonUnknownAuthoredVersion, err.Error())
	setCondition(&d.Status.Conditions, d.Generation, ConditionStalled, metav1.ConditionTrue, ReasonUnknownAuthoredVersion, err.Error())
}

// setDrinkConflict: the ConfigMap name is taken by an object the Drink
// does not control. Only someone else can free it (kstatus Stalled); the
// reconciler rechecks until then.
func setDrinkConflict(d *drinksv1.Drink, c *ConflictError) {
	d.Status.ObservedGeneration = d.Generation
	setCondition(&d.Status.Conditions, d.Generation, drinksv1.ConditionReady, metav1.ConditionFalse, c.Reason(), c.Error())
	setCondition(&d.Status.Conditions, d.Generation, ConditionStalled, metav1.ConditionTrue, c.Reason(), c.Error())
}

// setDrinkApplyFailed: writing the ConfigMap failed; the reconcile is
// retried with backoff. The generation is not observed yet.
func setDrinkApplyFailed(d *drinksv1.Drink, err error) {
	if apierrors.IsConflict(err) {
		return // a stale read, not a state to report; the retry resolves it
	}
	setCondition(&d.Status.Conditions, d.Generation, drinksv1.ConditionReady, metav1.ConditionFalse, ReasonApplyFailed,
		"writing ConfigMap "+d.Name+" failed; retrying: "+err.Error())
	meta.RemoveStatusCondition(&d.Status.Conditions, ConditionStalled)
}

// setCondition sets a condition; its transition time changes only when its
// status does, so an unchanged condition costs no write.
func setCondition(conds *[]metav1.Condition, generation int64, typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: generation,
	})
}

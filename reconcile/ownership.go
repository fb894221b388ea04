package reconcile

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// conflictRecheck is how soon an owner whose operand name is taken looks
// again. The foreign object carries none of the operator's labels or owner
// references, so its deletion wakes no watch: the recheck is what makes a
// conflict clear by itself within seconds of the name freeing up.
const conflictRecheck = 3 * time.Second

// ConflictError means an operand's name is taken by an object its owner
// does not control. The operator never changes, adopts or deletes such an
// object; it reports the conflict until the name is free.
type ConflictError struct {
	// Kind of the operand: ConfigMap, StatefulSet or Service.
	Kind            string
	Namespace, Name string
	// Controller is the other object's controller, nil when it has none or
	// is not known (a create that lost a race).
	Controller *metav1.OwnerReference
	// Owner names the object whose operand it is, as "Drink" or "Guestbook".
	Owner string
	// Hint, when set, says how the object's owner can let it be used.
	Hint string
}

func (e *ConflictError) Error() string {
	by := "it has no controller"
	if c := e.Controller; c != nil {
		by = fmt.Sprintf("its controller is %s %s (uid %s)", c.Kind, c.Name, c.UID)
	}
	msg := fmt.Sprintf("%s %s/%s already exists and is not controlled by this %s (%s); "+
		"the operator leaves it unchanged and creates its own once the name is free",
		e.Kind, e.Namespace, e.Name, e.Owner, by)
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// Reason is the condition and event reason of the conflict, for example
// ConfigMapConflict.
func (e *ConflictError) Reason() string { return e.Kind + "Conflict" }

// report records the conflict, once its owner's status shows it (set by
// the caller into now): a Warning event and the conflict counter when the
// Ready condition changed from what the reconcile read, so that a conflict
// that lasts is reported once, not at every recheck. The result rechecks
// soon, since the foreign object's deletion wakes no watch.
func (e *ConflictError) report(recorder events.EventRecorder, owner runtime.Object, read, now []metav1.Condition) ctrl.Result {
	if readyChanged(read, now) {
		recorder.Eventf(owner, nil, corev1.EventTypeWarning, e.Reason(), "Create"+e.Kind, "%s", e.Error())
		conflictsTotal.WithLabelValues(e.Kind).Inc()
	}
	return ctrl.Result{RequeueAfter: conflictRecheck}
}

// conflictWith describes obj, found under an operand's name, as a conflict.
func conflictWith(kind, owner string, obj client.Object) *ConflictError {
	return &ConflictError{Kind: kind, Owner: owner, Namespace: obj.GetNamespace(), Name: obj.GetName(),
		Controller: metav1.GetControllerOf(obj)}
}

// controlledBy reports whether uid is obj's controller.
func controlledBy(obj client.Object, uid types.UID) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == uid
}

// readOperand reads an operand from the cache and, on a miss, once from
// the API server: the cache may hold only the operator's labelled objects,
// and a miss alone cannot tell an absent name from one taken by an object
// someone else made. It reports whether the object exists.
func readOperand(ctx context.Context, cached client.Reader, uncached client.Reader, key client.ObjectKey, obj client.Object) (bool, error) {
	found, _, err := readOperandFrom(ctx, cached, uncached, key, obj)
	return found, err
}

// readOperandFrom is readOperand that also says whether obj came from the
// cache, where it may be trimmed (TrimConfigMap).
func readOperandFrom(ctx context.Context, cached client.Reader, uncached client.Reader, key client.ObjectKey, obj client.Object) (found, fromCache bool, err error) {
	err = cached.Get(ctx, key, obj)
	if err == nil {
		return true, true, nil
	}
	if apierrors.IsNotFound(err) {
		err = uncached.Get(ctx, key, obj)
	}
	if apierrors.IsNotFound(err) {
		return false, false, nil
	}
	return err == nil, false, err
}

// readyChanged reports whether a reconcile changed the Ready condition
// from what it read: the moment to record an event about it, so that a
// conflict that lasts is reported once, not at every recheck.
func readyChanged(read, now []metav1.Condition) bool {
	const ready = "Ready" // the same type in every API group of the operator
	a, b := meta.FindStatusCondition(read, ready), meta.FindStatusCondition(now, ready)
	if a == nil || b == nil {
		return a != b
	}
	return a.Status != b.Status || a.Reason != b.Reason || a.Message != b.Message
}

package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webappv1 "github.com/example/myoperator/apis/webapp/v1"
)

// operand is one object the Guestbook controls in the operand namespace.
type operand struct {
	kind string
	key  client.ObjectKey
	// live receives the object as it is.
	live client.Object
	// desired is the apply configuration the operator wants.
	desired runtime.ApplyConfiguration
	// owned extracts from live the fields the operator owns (its server-
	// side apply entry in the managed fields), as an apply configuration.
	owned func() (any, error)
	// guard makes desired apply only to the object with this UID.
	guard func(types.UID)
	// added lists the paths of fields desired sets that the previous
	// release did not (see lostFields).
	added []string
	// prepare, if set, runs before an apply: what the apply cannot do
	// itself (releaseCreatedFields), done first so that the apply never
	// meets a mix of old and new values the API server refuses, such as a
	// memory request of the new resources above the old limit.
	prepare func() error
}

// ensureOperand converges one operand. It creates the object when the name
// is free; an object of that name that the Guestbook does not control is a
// *ConflictError and stays untouched. Otherwise it compares the fields the
// operator owns on the live object with desired and applies desired when
// they differ: a value the Guestbook now asks for, or a field another
// writer changed (a scale through the scale subresource, a selector edit),
// which moved that field's ownership away from the operator. The latter is
// reverted with an event. An unchanged object costs no write and no read
// beyond the cache.
func (r *GuestbookReconciler) ensureOperand(ctx context.Context, g *webappv1.Guestbook, cached client.Reader, op operand) error {
	key := op.key
	found, err := readOperand(ctx, cached, r.APIReader, key, op.live)
	switch {
	case err != nil:
		return err
	case !found:
		return r.createOperand(ctx, op)
	case !controlledBy(op.live, g.UID):
		return conflictWith(op.kind, "Guestbook", op.live)
	case len(op.live.GetManagedFields()) == 0:
		// Without them every object would look changed and be written at
		// every reconcile.
		return fmt.Errorf("%s %s has no managed fields: the manager's cache must keep them for %ss", op.kind, key, op.kind)
	}
	owned, err := op.owned()
	if err != nil {
		return err
	}
	want, have, err := asTrees(op.desired, owned)
	if err != nil || reflect.DeepEqual(want, have) {
		return err
	}
	// Before the operator's first apply it owns the object only through
	// its create; that first apply takes the fields over, it corrects
	// nothing.
	lost := []string(nil)
	if appliedBefore(op.live) {
		_, live, err := asTrees(nil, op.live)
		if err != nil {
			return err
		}
		lost = lostFields(want, have, live, "", op.added)
	}
	if op.prepare != nil {
		if err := op.prepare(); err != nil {
			return err
		}
	}
	// The UID makes the apply fail rather than reach an object that
	// replaced this one since the cache saw it.
	op.guard(op.live.GetUID())
	if err := r.Client.Apply(ctx, op.desired, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return err
	}
	if len(lost) > 0 {
		driftCorrectionsTotal.WithLabelValues(op.kind).Inc()
		r.Recorder.Eventf(g, op.live, corev1.EventTypeNormal, op.kind+"Corrected", "Apply",
			"%s %s: reverted %s, changed by another writer", op.kind, key, strings.Join(lost, ", "))
	}
	return nil
}

// createOperand creates the operand from its apply configuration. A
// create, not an apply: should an object of that name appear meanwhile,
// the create fails instead of merging into someone else's object.
func (r *GuestbookReconciler) createOperand(ctx context.Context, op operand) error {
	raw, err := json.Marshal(op.desired)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, op.live); err != nil {
		return err
	}
	err = r.Client.Create(ctx, op.live, client.FieldOwner(FieldOwner))
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(op.live), op.live); err != nil {
		return err
	}
	return conflictWith(op.kind, "Guestbook", op.live)
}

// appliedBefore reports whether the operator has server-side applied obj.
func appliedBefore(obj client.Object) bool {
	return slices.ContainsFunc(obj.GetManagedFields(), func(e metav1.ManagedFieldsEntry) bool {
		return e.Manager == FieldOwner && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == ""
	})
}

// asTrees renders two apply configurations as JSON trees, which compare
// by value (quantities and int-or-strings as they serialize).
func asTrees(a, b any) (any, any, error) {
	var trees [2]any
	for i, v := range []any{a, b} {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, nil, err
		}
		if err := json.Unmarshal(raw, &trees[i]); err != nil {
			return nil, nil, err
		}
	}
	return trees[0], trees[1], nil
}

// lostFields lists the paths that want sets and have (the fields the
// operator owns) lacks, and where live (the whole object) does not hold
// what want says: fields the operator applied and another writer changed.
// A field the operator does not own but whose value is already the wanted
// one was changed by nobody: a release that did not apply it before (a
// defaulted protocol, say) takes it over without a correction to report.
// Nor was a field of added (paths as reported here) that live lacks
// altogether: the previous release never set it, and the first apply after
// an upgrade adds it. (Managed fields cannot tell that from another
// writer's removal of it, which is reverted all the same, only without the
// event.)
func lostFields(want, have, live any, path string, added []string) []string {
	var lost []string
	switch w := want.(type) {
	case map[string]any:
		h, _ := have.(map[string]any)
		l, _ := live.(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(w)) {
			p := strings.TrimPrefix(path+"."+k, ".")
			if hv, ok := h[k]; ok {
				lost = append(lost, lostFields(w[k], hv, l[k], p, added)...)
			} else if !holds(l[k], w[k]) && (l[k] != nil || !slices.Contains(added, p)) {
				lost = append(lost, p)
			}
		}
	case []any:
		h, _ := have.([]any)
		l, _ := live.([]any)
		for i := range w {
			p := fmt.Sprintf("%s[%d]", path, i)
			var lv any
			if i < len(l) {
				lv = l[i]
			}
			if i < len(h) {
				lost = append(lost, lostFields(w[i], h[i], lv, p, added)...)
			} else if !holds(lv, w[i]) {
				lost = append(lost, p)
			}
		}
	}
	return lost
}

// holds says whether live has every value that want sets (live may hold
// more: defaults, other writers' fields).
func holds(live, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !holds(l[k], v) {
				return false
			}
		}
		return true
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) < len(w) {
			return false
		}
		for i := range w {
			if !holds(l[i], w[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(live, want)
	}
}

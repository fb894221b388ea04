package reconcile

import (
	"context"
	"errors"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/internal/render"
	"github.com/example/myoperator/internal/shard"
)

// Event reasons of the Drink reconciler.
const (
	// ReasonConfigMapRestored: the ConfigMap was missing and was created.
	ReasonConfigMapRestored = "ConfigMapRestored"
	// ReasonConfigMapCorrected: the ConfigMap, already rendered for the
	// Drink's current spec, was changed by someone else and was corrected.
	// (A ConfigMap rendered anew after the user changed the spec or its
	// version gets no event: Ready at the new generation says it.)
	ReasonConfigMapCorrected = "ConfigMapCorrected"
	// ReasonConfigMapAdopted: a ConfigMap that the previous release made
	// for this Drink (its owner references name the Drink's UID, it carries
	// none of the operator's labels) was taken over in place.
	ReasonConfigMapAdopted = "ConfigMapAdopted"
)

// ensureConfigMap makes the Drink's ConfigMap hold data. It creates the
// ConfigMap when the name is free and otherwise writes only to one the
// Drink controls, or to the previous release's ConfigMap of this Drink,
// which it adopts in place. Any other object under the name is a
// *ConflictError and stays as it is. Nothing is sent, and nothing read
// beyond the cache, when the cached ConfigMap already matches. It returns
// the event reason of a write, or "" for none.
func (r *DrinkReconciler) ensureConfigMap(ctx context.Context, d *drinksv1.Drink, data map[string]string) (string, error) {
	key := client.ObjectKey{Namespace: d.Namespace, Name: d.Name}
	layout := render.LayoutName(r.versions(), d)
	live := &corev1.ConfigMap{}
	found, fromCache, err := readOperandFrom(ctx, r.Client, r.APIReader, key, live)
	// A trimmed ConfigMap keeps its owner references, so a conflict is
	// still told from the cache, below, unless the trim cut some of them.
	if err == nil && found && fromCache && isTrimmed(live) && (ownersCut(live) || controlledBy(live, d.UID) || namesOwner(live, d.UID)) {
		if trimmedMatches(live, d, layout, data, r.bucketLabel(d)) {
			return "", nil
		}
		// The cache holds a digest, not the data (TrimConfigMap): what to
		// write is decided on the whole object, read from the API server.
		live = &corev1.ConfigMap{}
		if err = r.APIReader.Get(ctx, key, live); apierrors.IsNotFound(err) {
			found, err = false, nil // deleted since the cache saw it
		}
	}
	switch {
	case err != nil:
		return "", err
	case !found:
		return r.restoreConfigMap(ctx, d, layout, data)
	case !controlledBy(live, d.UID) && !namesOwner(live, d.UID):
		return "", conflictWith("ConfigMap", "Drink", live)
	case configMapMatches(live, d, layout, data, r.bucketLabel(d)):
		return "", nil
	}
	reason := ReasonConfigMapCorrected
	if !controlledBy(live, d.UID) || live.Labels[names.ManagedByLabel] != names.ManagedByValue {
		reason = ReasonConfigMapAdopted
	}
	return reason, r.patchConfigMap(ctx, live, d, layout, data)
}

// restoreConfigMap creates the Drink's missing ConfigMap.
func (r *DrinkReconciler) restoreConfigMap(ctx context.Context, d *drinksv1.Drink, layout string, data map[string]string) (string, error) {
	if d.Status.ConfigMapName != "" {
		// The ConfigMap this Drink had is gone. So may be the Drink, with
		// the cache not told yet: the garbage collector deletes a Drink's
		// ConfigMap right after the Drink, and the ConfigMap's event can
		// reach this controller first. A ConfigMap restored for a deleted
		// Drink is an orphan that the collector removes only while the
		// Drink's kind exists, not after an uninstall took the CRD away.
		// A restore is rare; it reads the Drink live first.
		gone, err := r.drinkGone(ctx, d)
		if err != nil {
			return "", err
		}
		if gone {
			return "", errDrinkGone
		}
	}
	return ReasonConfigMapRestored, r.createConfigMap(ctx, d, layout, data)
}

// createConfigMap creates the ConfigMap. A create, not an apply: should an
// object of that name appear meanwhile, the create fails instead of
// merging into someone else's object, and the name is reported taken.
func (r *DrinkReconciler) createConfigMap(ctx context.Context, d *drinksv1.Drink, layout string, data map[string]string) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name,
			Labels:          map[string]string{names.ManagedByLabel: names.ManagedByValue, names.DrinkLabel: d.Name},
			Annotations:     map[string]string{names.LayoutAnnotation: layout},
			OwnerReferences: []metav1.OwnerReference{drinkOwnerRef(d)}},
		Data: data,
	}
	if b := r.bucketLabel(d); b != "" {
		cm.Labels[shard.BucketLabel] = b
	}
	err := r.Client.Create(ctx, cm, client.FieldOwner(FieldOwner))
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	// Someone else's object won the race: name it, as a conflict.
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		return err
	}
	return conflictWith("ConfigMap", "Drink", cm)
}

// patchConfigMap corrects a ConfigMap the Drink controls or adopts: it
// sets the keys of the Drink's layout, removes the keys of the layout the
// ConfigMap was in before when the layout changed, and makes the Drink its
// labelled controller. Keys others add are left alone. The patch carries
// the resourceVersion it was computed from, so it fails rather than write
// to an object that changed (or was replaced) since it was read.
func (r *DrinkReconciler) patchConfigMap(ctx context.Context, live *corev1.ConfigMap, d *drinksv1.Drink, layout string, data map[string]string) error {
	want := live.DeepCopy()
	for _, k := range staleKeys(r.versions(), live, layout) {
		delete(want.Data, k)
	}
	if want.Data == nil {
		want.Data = map[string]string{}
	}
	maps.Copy(want.Data, data)
	metav1.SetMetaDataLabel(&want.ObjectMeta, names.ManagedByLabel, names.ManagedByValue)
	metav1.SetMetaDataLabel(&want.ObjectMeta, names.DrinkLabel, d.Name)
	if b := r.bucketLabel(d); b != "" {
		metav1.SetMetaDataLabel(&want.ObjectMeta, shard.BucketLabel, b)
	}
	metav1.SetMetaDataAnnotation(&want.ObjectMeta, names.LayoutAnnotation, layout)
	want.OwnerReferences = asController(live.OwnerReferences, drinkOwnerRef(d))
	return r.Client.Patch(ctx, want, client.MergeFromWithOptions(live, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldOwner))
}

// staleKeys are the keys of the layout the ConfigMap was written in that
// the Drink's current layout (named layout) does not have, both layouts
// those of t.
func staleKeys(t drinksversions.Table, cm *corev1.ConfigMap, layout string) []string {
	old := cm.Annotations[names.LayoutAnnotation]
	if old == layout {
		return nil
	}
	current := layoutKeys(t, layout)
	var stale []string
	for _, k := range layoutKeys(t, old) {
		if !slices.Contains(current, k) {
			stale = append(stale, k)
		}
	}
	return stale
}

func drinkOwnerRef(d *drinksv1.Drink) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: drinksv1.GroupVersion.String(), Kind: "Drink", Name: d.Name, UID: d.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// namesOwner reports whether obj has no controller and an owner reference
// with uid: what the previous release left, the one case of adoption.
func namesOwner(obj client.Object, uid types.UID) bool {
	if metav1.GetControllerOf(obj) != nil {
		return false
	}
	return slices.ContainsFunc(obj.GetOwnerReferences(), func(ref metav1.OwnerReference) bool { return ref.UID == uid })
}

// asController returns refs with ref as the controller reference: it
// replaces the reference with ref's UID, or is appended.
func asController(refs []metav1.OwnerReference, ref metav1.OwnerReference) []metav1.OwnerReference {
	out := slices.Clone(refs)
	if i := slices.IndexFunc(out, func(r metav1.OwnerReference) bool { return r.UID == ref.UID }); i >= 0 {
		out[i] = ref
		return out
	}
	return append(out, ref)
}

// configMapMatches reports whether the ConfigMap already is what the Drink
// wants: its data keys hold the wanted values, it is in the wanted layout
// and labelled (with bucket too, unless that is ""), and the Drink is its
// controller, referenced as it would write the reference.
func configMapMatches(cm *corev1.ConfigMap, d *drinksv1.Drink, layout string, data map[string]string, bucket string) bool {
	if bucket != "" && cm.Labels[shard.BucketLabel] != bucket {
		return false
	}
	for k, v := range data {
		if got, ok := cm.Data[k]; !ok || got != v {
			return false
		}
	}
	if cm.Annotations[names.LayoutAnnotation] != layout || cm.Labels[names.DrinkLabel] != d.Name ||
		cm.Labels[names.ManagedByLabel] != names.ManagedByValue {
		return false
	}
	return ownerRefsMatch(cm, d)
}

// ownerRefsMatch: the Drink is cm's controller, referenced as it would
// write the reference.
func ownerRefsMatch(cm *corev1.ConfigMap, d *drinksv1.Drink) bool {
	return apiequality.Semantic.DeepEqual(cm.OwnerReferences, asController(cm.OwnerReferences, drinkOwnerRef(d)))
}

// errDrinkGone: the Drink the cache holds no longer exists (or is another
// one of the same name, or is being deleted); nothing is written for it.
var errDrinkGone = errors.New("the Drink is gone from the API server")

// drinkGone reads the Drink's metadata from the API server: it is gone
// when it is not found, has another UID or is being deleted.
func (r *DrinkReconciler) drinkGone(ctx context.Context, d *drinksv1.Drink) (bool, error) {
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(drinksv1.GroupVersion.WithKind("Drink"))
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(d), live)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return live.UID != d.UID || !live.DeletionTimestamp.IsZero(), nil
}

package reconcile

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
)

const (
	// ManagedByLabel marks what the operator writes; its cache of
	// ConfigMaps and Pods holds only objects with this label.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByValue is ManagedByLabel's value.
	ManagedByValue = "myoperator"
	// DrinkLabel names the Drink a ConfigMap belongs to.
	DrinkLabel = "example.com/drink"
	// LayoutAnnotation records the layout a Drink's ConfigMap was written
	// in, so that a layout change is seen without reading managedFields.
	LayoutAnnotation = "example.com/layout"
)

// Event reasons of the Drink reconciler.
const (
	// ReasonConfigMapRestored: the ConfigMap was missing (or not the
	// operator's yet) and was written.
	ReasonConfigMapRestored = "ConfigMapRestored"
	// ReasonConfigMapCorrected: the ConfigMap differed from the Drink (an
	// edit by someone else, or a new layout) and was corrected.
	ReasonConfigMapCorrected = "ConfigMapCorrected"
)

// applyConfigMap makes the Drink's ConfigMap hold data, owned by the Drink,
// with server-side apply: only the keys the operator owns are written and
// reclaimed, keys others add are left alone, and a layout change removes the
// keys of the old layout. Nothing is sent when the cached ConfigMap already
// matches. It returns the event reason of a write, or "" for none.
func (r *DrinkReconciler) applyConfigMap(ctx context.Context, d *drinksv1.Drink, data map[string]string) (string, error) {
	current := &corev1.ConfigMap{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: d.Name}, current)
	switch {
	case apierrors.IsNotFound(err):
		// Not in the cache: absent, or not labelled yet (for example left by
		// the previous release); applying creates or adopts it in place.
		current = nil
	case err != nil:
		return "", err
	}
	d.Status.ConfigMapName = d.Name
	if current != nil && configMapMatches(current, d, data) {
		return "", nil
	}
	owner := metav1ac.OwnerReference().
		WithAPIVersion(drinksv1.GroupVersion.String()).WithKind("Drink").
		WithName(d.Name).WithUID(d.UID).WithController(true).WithBlockOwnerDeletion(true)
	cm := corev1ac.ConfigMap(d.Name, d.Namespace).
		WithLabels(map[string]string{ManagedByLabel: ManagedByValue, DrinkLabel: d.Name}).
		WithAnnotations(map[string]string{LayoutAnnotation: AuthoredVersion(d)}).
		WithOwnerReferences(owner).
		WithData(data)
	if err := r.Client.Apply(ctx, cm, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return "", err
	}
	if current == nil {
		return ReasonConfigMapRestored, nil
	}
	return ReasonConfigMapCorrected, nil
}

// configMapMatches reports whether the ConfigMap already is what the Drink
// wants: its data keys hold the wanted values, it is in the wanted layout
// and labelled, and the Drink is its controller.
func configMapMatches(cm *corev1.ConfigMap, d *drinksv1.Drink, data map[string]string) bool {
	for k, v := range data {
		if got, ok := cm.Data[k]; !ok || got != v {
			return false
		}
	}
	if cm.Annotations[LayoutAnnotation] != AuthoredVersion(d) || cm.Labels[DrinkLabel] != d.Name ||
		cm.Labels[ManagedByLabel] != ManagedByValue {
		return false
	}
	ref := metav1.GetControllerOf(cm)
	return ref != nil && ref.UID == d.UID
}

package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
)

// Labels the operator puts on the ConfigMaps it writes (internal/names'
// ManagedByLabel, DrinkLabel and LayoutAnnotation); written out here so that
// the bench checks the operator against the product's contract rather than
// against its own constants.
const (
	managedByLabel   = "app.kubernetes.io/managed-by"
	managedByValue   = "myoperator"
	drinkLabel       = "example.com/drink"
	layoutAnnotation = "example.com/layout"
)

// newDrink is the i-th Drink of a phase, written in v1 (the storage version,
// so creating it needs no conversion), with every v1 field set.
func newDrink(ns string, i int) *drinksv1.Drink {
	return &drinksv1.Drink{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("drink-%05d", i)},
		Spec: drinksv1.DrinkSpec{
			DisplayName: fmt.Sprintf("Drink number %d", i), Beverage: "tea",
			Size: drinksv1.SizeLarge, SugarCubes: int32(i % 11), Extras: []string{"milk", "honey"},
		},
	}
}

// wantData is the ConfigMap data of a Drink authored in v1, per the
// product's layout table: extras sorted and comma-separated.
func wantData(d *drinksv1.Drink) map[string]string {
	extras := slices.Clone(d.Spec.Extras)
	slices.Sort(extras)
	return map[string]string{
		"displayName": d.Spec.DisplayName, "beverage": d.Spec.Beverage, "size": string(d.Spec.Size),
		"sugarCubes": strconv.Itoa(int(d.Spec.SugarCubes)), "extras": strings.Join(extras, ","),
	}
}

// drinkDone: the status describes the current generation and says Ready.
func drinkDone(d *drinksv1.Drink) bool {
	return d.Status.ObservedGeneration == d.Generation &&
		meta.IsStatusConditionTrue(d.Status.Conditions, drinksv1.ConditionReady)
}

// configMapCorrect: the ConfigMap holds the v1 layout of d's spec and d is
// its controller.
func configMapCorrect(cm *corev1.ConfigMap, d *drinksv1.Drink) bool {
	if cm == nil {
		return false
	}
	for k, v := range wantData(d) {
		if cm.Data[k] != v {
			return false
		}
	}
	ref := metav1.GetControllerOf(cm)
	return ref != nil && ref.UID == d.UID
}

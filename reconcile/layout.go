package reconcile

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
)

// UnknownVersionError means a Drink's authored version names no layout.
type UnknownVersionError struct{ Version string }

func (e *UnknownVersionError) Error() string {
	if e.Version == "" {
		return "the Drink has no recorded authored version (" + drinksv1.AuthoredVersionAnnotation +
			"); write its spec once through any served version to record one"
	}
	return fmt.Sprintf("authored version %q has no ConfigMap layout; served versions are v1alpha1, v1beta1 and v1", e.Version)
}

// AuthoredVersion is the API version a Drink's spec was last written in, as
// the mutating webhook recorded it.
func AuthoredVersion(d *drinksv1.Drink) string {
	return d.Annotations[drinksv1.AuthoredVersionAnnotation]
}

// ConfigMapData renders a Drink's ConfigMap in the layout of the version
// its spec was authored in, so that apps reading the ConfigMaps of objects
// written in an old version keep working until their owner moves on. This
// is the one place where the reconciler's behaviour differs by version.
func ConfigMapData(d *drinksv1.Drink) (map[string]string, error) {
	s := d.Spec
	switch v := AuthoredVersion(d); v {
	case "v1alpha1":
		// Exactly the original course's layout.
		return map[string]string{"name": s.DisplayName, "drink": s.Beverage}, nil
	case "v1beta1":
		return map[string]string{
			"name": s.DisplayName, "drink": s.Beverage,
			"size": string(s.Size), "sugar": strconv.Itoa(int(s.SugarCubes)),
		}, nil
	case "v1":
		extras := slices.Clone(s.Extras)
		slices.Sort(extras)
		return map[string]string{
			"displayName": s.DisplayName, "beverage": s.Beverage,
			"size": string(s.Size), "sugarCubes": strconv.Itoa(int(s.SugarCubes)),
			"extras": strings.Join(extras, ","),
		}, nil
	default:
		return nil, &UnknownVersionError{Version: v}
	}
}

// layoutKeys are the data keys of a version's layout, none for a version
// without one; derived from ConfigMapData so that layouts stay in one place.
func layoutKeys(version string) []string {
	d := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: version}}}
	data, err := ConfigMapData(d)
	if err != nil {
		return nil
	}
	return slices.Sorted(maps.Keys(data))
}

package render

import (
	"fmt"
	"strconv"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
)

// UnknownVersionError means a Drink's authored version names no layout.
type UnknownVersionError struct {
	Version string
	// Served are the versions of the table the Drink was rendered with
	// that a client can write in, for the message.
	Served []string
}

func (e *UnknownVersionError) Error() string {
	if e.Version == "" {
		return "the Drink has no recorded authored version (" + drinksv1.AuthoredVersionAnnotation +
			"); write its spec once through any served version to record one"
	}
	return fmt.Sprintf("authored version %q has no ConfigMap layout; served versions are %s", e.Version, drinksversions.List(e.Served))
}

// AuthoredVersion is the API version a Drink's spec was last written in, as
// the mutating webhook recorded it. A Drink in the course form without a
// record was written through example.com/v1 by a client of the course's
// operator, before this operator was installed (every write through its
// admission records a version), and no client has written it since.
func AuthoredVersion(d *drinksv1.Drink) string {
	if v, ok := d.Annotations[drinksv1.AuthoredVersionAnnotation]; ok {
		return v
	}
	if d.Spec.InCourseForm() {
		return drinksv1.GroupVersion.Version
	}
	return ""
}

// LayoutName names the layout of a Drink's ConfigMap in t: its authored
// version's, or that version's course layout when the Drink is in the
// course form (drinksversions.Table.LayoutName). The ConfigMap records it
// in names.LayoutAnnotation.
func LayoutName(t drinksversions.Table, d *drinksv1.Drink) string {
	return t.LayoutName(AuthoredVersion(d), d.Spec.InCourseForm())
}

// ConfigMapData renders a Drink's ConfigMap in the layout of the version
// its spec was authored in, so that apps reading the ConfigMaps of objects
// written in an old version keep working until their owner moves on. This
// is the one place where the reconciler's behaviour differs by version; the
// layouts are those of drinksversions.Drinks.
func ConfigMapData(d *drinksv1.Drink) (map[string]string, error) {
	return ConfigMapDataIn(drinksversions.Drinks, d)
}

// ConfigMapDataIn is ConfigMapData with the layouts of the table t.
func ConfigMapDataIn(t drinksversions.Table, d *drinksv1.Drink) (map[string]string, error) {
	layout := t.Layout(LayoutName(t, d))
	if len(layout) == 0 {
		return nil, &UnknownVersionError{Version: AuthoredVersion(d), Served: t.Served()}
	}
	return drinksversions.Render(layout, func(f string) string { return hubValue(&d.Spec, f) }), nil
}

// hubValue is the ConfigMap value of the hub spec field f (its JSON name),
// "" for a name the hub does not have (a test holds the table to the hub).
// displayName and beverage fall back to the course's fields, which a Drink
// stored by the course's operator holds alone.
func hubValue(s *drinksv1.DrinkSpec, f string) string {
	switch f {
	case "displayName":
		return s.DisplayNameOrName()
	case "beverage":
		return s.BeverageOrDrink()
	case "name":
		return s.Name
	case "drink":
		return s.Drink
	case "size":
		return string(s.Size)
	case "sugarCubes":
		return strconv.Itoa(int(s.SugarCubes))
	case "extras":
		return drinksversions.JoinList(s.Extras)
	}
	return ""
}

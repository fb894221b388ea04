package reconcile

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
// the mutating webhook recorded it.
func AuthoredVersion(d *drinksv1.Drink) string {
	return d.Annotations[drinksv1.AuthoredVersionAnnotation]
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
	v, ok := t.Lookup(AuthoredVersion(d))
	if !ok || len(v.Layout) == 0 {
		return nil, &UnknownVersionError{Version: AuthoredVersion(d), Served: t.Served()}
	}
	return v.Render(func(f string) string { return hubValue(&d.Spec, f) }), nil
}

// hubValue is the ConfigMap value of the hub spec field f (its JSON name),
// "" for a name the hub does not have (a test holds the table to the hub).
func hubValue(s *drinksv1.DrinkSpec, f string) string {
	switch f {
	case "displayName":
		return s.DisplayName
	case "beverage":
		return s.Beverage
	case "size":
		return string(s.Size)
	case "sugarCubes":
		return strconv.Itoa(int(s.SugarCubes))
	case "extras":
		return drinksversions.JoinList(s.Extras)
	}
	return ""
}

// layoutKeys are the data keys of a version's layout in t, sorted; none for
// a version without one.
func layoutKeys(t drinksversions.Table, version string) []string {
	v, _ := t.Lookup(version)
	return v.LayoutKeys()
}

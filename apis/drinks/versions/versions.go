package versions

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Version is one version of the Drink API, as every release has known it.
type Version struct {
	// Name is the version of apiVersion example.com/<Name>.
	Name string
	// Served is true while the CRD serves the version. A version no longer
	// served stays in the table: migration still meets it in managedFields
	// and storedVersions, and Drinks authored in it keep their layout.
	Served bool
	// Deprecated is true when the CRD marks the version deprecated;
	// DeprecationWarning is the warning the API server then sends with every
	// request in it (the +kubebuilder:deprecatedversion marker of its Go
	// package, which a test compares with this table).
	Deprecated         bool
	DeprecationWarning string
	// Storage is true for the storage version, which is also the hub that
	// every other version converts through. Exactly one version is.
	Storage bool
	// Fields are the spec fields the version holds, by their JSON names in
	// this version.
	Fields []string
	// Renames maps each of Fields that the hub names otherwise to the hub's
	// name.
	Renames map[string]string
	// Layout is the ConfigMap data of a Drink authored in this version:
	// each data key and the hub spec field whose value it holds. A list is
	// written sorted and comma-separated (JoinList). Without a layout the
	// reconciler cannot render the Drink.
	Layout map[string]string
	// Course maps the fields the version also holds under the names the
	// original course gave them in its own example.com/v1 Drink, each to
	// the field of the version it stands for. A Drink that sets one of them
	// is in the version's course form. Only the hub has them; they are
	// among its Fields, so that conversion keeps them like any hub field.
	Course map[string]string
	// CourseLayout is the ConfigMap data of a Drink written in the
	// version's course form, as Layout is for its own form.
	CourseLayout map[string]string
	// Legacy is true for the version of the release before authored
	// versions were recorded: it served this version alone and stored
	// Drinks in it, so a Drink stored then that has no record was written
	// in it. The storage migration records it on those Drinks.
	Legacy bool
}

// HubName is the hub's name of the version's spec field f.
func (v Version) HubName(f string) string {
	if n, ok := v.Renames[f]; ok {
		return n
	}
	return f
}

// LayoutKeys are the data keys of the version's ConfigMap layout, sorted;
// none when it has no layout.
func (v Version) LayoutKeys() []string {
	return LayoutKeys(v.Layout)
}

// Render returns the ConfigMap data of the version's layout, each key
// holding value of its hub field; nil when the version has no layout.
func (v Version) Render(value func(hubField string) string) map[string]string {
	return Render(v.Layout, value)
}

// CourseSuffix ends the name of a version's course layout: "v1+course" is
// the ConfigMap layout of a Drink written in v1's course form.
const CourseSuffix = "+course"

// LayoutName names the ConfigMap layout of a Drink authored in version:
// the version's name, or with CourseSuffix when the Drink is in the
// course form (course) and the version has a course layout.
func (t Table) LayoutName(version string, course bool) string {
	if v, ok := t.Lookup(version); ok && course && len(v.CourseLayout) > 0 {
		return version + CourseSuffix
	}
	return version
}

// Layout returns the layout that LayoutName named name; nil when there is
// none.
func (t Table) Layout(name string) map[string]string {
	if version, ok := strings.CutSuffix(name, CourseSuffix); ok {
		v, _ := t.Lookup(version)
		return v.CourseLayout
	}
	v, _ := t.Lookup(name)
	return v.Layout
}

// LayoutKeys are the data keys of layout, sorted.
func LayoutKeys(layout map[string]string) []string {
	return slices.Sorted(maps.Keys(layout))
}

// Render returns the ConfigMap data of layout, each key holding value of
// its hub field; nil for no layout.
func Render(layout map[string]string, value func(hubField string) string) map[string]string {
	if len(layout) == 0 {
		return nil
	}
	data := make(map[string]string, len(layout))
	for k, f := range layout {
		data[k] = value(f)
	}
	return data
}

// JoinList is how a layout writes a list field (extras): sorted and
// comma-separated, so that the order a client wrote does not matter.
func JoinList(items []string) string {
	sorted := slices.Clone(items)
	slices.Sort(sorted)
	return strings.Join(sorted, ",")
}

// Table is every version of the Drink API any release served, oldest
// first. Consumers take a Table so that a table with one more version needs
// no change of their code (a test adds one); an empty Table stands for
// Drinks (OrDrinks).
type Table []Version

// Drinks is the table of the Drink API's versions.
var Drinks = Table{
	{
		Name:   "v1alpha1",
		Served: true, Deprecated: true,
		DeprecationWarning: "example.com/v1alpha1 Drink is deprecated; use example.com/v1 Drink",
		Fields:             []string{"name", "drink"},
		Renames:            map[string]string{"name": "displayName", "drink": "beverage"},
		// Exactly the original course's layout.
		Layout: map[string]string{"name": "displayName", "drink": "beverage"},
		Legacy: true,
	},
	{
		Name:    "v1beta1",
		Served:  true,
		Fields:  []string{"name", "drink", "size", "sugar"},
		Renames: map[string]string{"name": "displayName", "drink": "beverage", "sugar": "sugarCubes"},
		Layout:  map[string]string{"name": "displayName", "drink": "beverage", "size": "size", "sugar": "sugarCubes"},
	},
	{
		Name:    "v1",
		Served:  true,
		Storage: true,
		Fields:  []string{"displayName", "beverage", "size", "sugarCubes", "extras", "name", "drink"},
		Layout: map[string]string{
			"displayName": "displayName", "beverage": "beverage", "size": "size", "sugarCubes": "sugarCubes", "extras": "extras",
		},
		// The course's own example.com/v1 Drink, and exactly its layout.
		Course:       map[string]string{"name": "displayName", "drink": "beverage"},
		CourseLayout: map[string]string{"name": "displayName", "drink": "beverage"},
	},
}

// OrDrinks returns t, or Drinks when t is empty: the zero value of a
// consumer's Table field means the Drink API as built.
func (t Table) OrDrinks() Table {
	if len(t) == 0 {
		return Drinks
	}
	return t
}

// Lookup returns the version named name.
func (t Table) Lookup(name string) (Version, bool) {
	i := slices.IndexFunc(t, func(v Version) bool { return v.Name == name })
	if i < 0 {
		return Version{}, false
	}
	return t[i], true
}

// Hub returns the storage version, the hub of conversion.
func (t Table) Hub() Version {
	i := slices.IndexFunc(t, func(v Version) bool { return v.Storage })
	if i < 0 {
		return Version{}
	}
	return t[i]
}

// Names returns every version's name, served or not.
func (t Table) Names() []string {
	names := make([]string, len(t))
	for i, v := range t {
		names[i] = v.Name
	}
	return names
}

// Served returns the names of the served versions.
func (t Table) Served() []string {
	var names []string
	for _, v := range t {
		if v.Served {
			names = append(names, v.Name)
		}
	}
	return names
}

// Spokes returns the names of the served versions other than the hub: those
// whose objects conversion serves from the hub.
func (t Table) Spokes() []string {
	var names []string
	for _, v := range t {
		if v.Served && !v.Storage {
			names = append(names, v.Name)
		}
	}
	return names
}

// Legacy returns the version of the release before authored versions were
// recorded (Version.Legacy).
func (t Table) Legacy() (Version, bool) {
	i := slices.IndexFunc(t, func(v Version) bool { return v.Legacy })
	if i < 0 {
		return Version{}, false
	}
	return t[i], true
}

// HubOnly returns the hub's spec fields (JSON names) that version has no
// field for, in the hub's order: conversion keeps their values in the
// conversion-data annotation. None for the hub or a version not in t.
func (t Table) HubOnly(version string) []string {
	v, ok := t.Lookup(version)
	if !ok || v.Storage {
		return nil
	}
	held := map[string]bool{}
	for _, f := range v.Fields {
		held[v.HubName(f)] = true
	}
	var only []string
	for _, f := range t.Hub().Fields {
		if !held[f] {
			only = append(only, f)
		}
	}
	return only
}

// Check returns what makes t inconsistent: names must be unique, exactly
// one version the storage hub (served, with every field under its own
// name), renames and layouts must name fields of the version and of the
// hub, a deprecated version must say so in a warning, and at most one
// version can be the legacy one.
func (t Table) Check() error {
	var errs []error
	hub := t.Hub()
	hubFields := map[string]bool{}
	for _, f := range hub.Fields {
		hubFields[f] = true
	}
	seen, storage, legacy := map[string]bool{}, 0, 0
	for _, v := range t {
		if v.Name == "" || seen[v.Name] {
			errs = append(errs, fmt.Errorf("version %q: empty or repeated name", v.Name))
		}
		seen[v.Name] = true
		if v.Storage {
			storage++
			if !v.Served || len(v.Renames) > 0 {
				errs = append(errs, fmt.Errorf("version %s: the storage hub must be served and name its fields itself", v.Name))
			}
		}
		if v.Legacy {
			legacy++
		}
		if v.Deprecated && v.DeprecationWarning == "" {
			errs = append(errs, fmt.Errorf("version %s: deprecated without a warning", v.Name))
		}
		for f := range v.Renames {
			if !slices.Contains(v.Fields, f) {
				errs = append(errs, fmt.Errorf("version %s: renames %s, which it does not hold", v.Name, f))
			}
		}
		for _, f := range v.Fields {
			if !hubFields[v.HubName(f)] {
				errs = append(errs, fmt.Errorf("version %s: field %s is %s in the hub, which has no such field", v.Name, f, v.HubName(f)))
			}
		}
		for k, f := range v.Layout {
			if !hubFields[f] {
				errs = append(errs, fmt.Errorf("version %s: layout key %s holds %s, which the hub does not have", v.Name, k, f))
			}
		}
		for c, f := range v.Course {
			if !v.Storage || !slices.Contains(v.Fields, c) || !slices.Contains(v.Fields, f) || v.Course[f] != "" {
				errs = append(errs, fmt.Errorf("version %s: course field %s for %s: only the hub has course fields, each among its fields and standing for one of its own", v.Name, c, f))
			}
		}
		for k, f := range v.CourseLayout {
			if !hubFields[f] || v.Course[f] != "" {
				errs = append(errs, fmt.Errorf("version %s: course layout key %s holds %s, which is not a field of the hub's own form", v.Name, k, f))
			}
		}
	}
	if storage != 1 {
		errs = append(errs, fmt.Errorf("%d storage versions, want exactly 1", storage))
	}
	if legacy > 1 {
		errs = append(errs, fmt.Errorf("%d legacy versions, want at most 1", legacy))
	}
	return errors.Join(errs...)
}

// List writes version names as a sentence does, for messages:
// "v1", "v1alpha1 and v1beta1", "v1alpha1, v1beta1 and v1".
func List(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

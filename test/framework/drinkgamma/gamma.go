package drinkgamma

import (
	"context"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/example/myoperator/apis/drinks"
	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
)

// Version is the fourth version's name.
const Version = "v1gamma1"

// GroupVersion is example.com/v1gamma1.
var GroupVersion = drinksv1.GroupVersion.WithKind("Drink").GroupKind().WithVersion(Version).GroupVersion()

// Drink is a Drink in v1gamma1: the hub's displayName is its title, and it
// holds beverage and sugarCubes. What it cannot hold is dropped: its
// conversion is only what the plumbing needs.
type Drink struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              DrinkSpec `json:"spec,omitempty"`
}

// DrinkSpec is v1gamma1's spec.
type DrinkSpec struct {
	Title      string `json:"title,omitempty"`
	Beverage   string `json:"beverage,omitempty"`
	SugarCubes int32  `json:"sugarCubes,omitempty"`
}

// DeepCopyObject copies d (its spec holds no pointers).
func (d *Drink) DeepCopyObject() runtime.Object {
	c := *d
	d.DeepCopyInto(&c.ObjectMeta) // the embedded ObjectMeta's
	return &c
}

func addToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Drink{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

func fromHub(_ context.Context, hub *drinksv1.Drink, d *Drink) error {
	hub.ObjectMeta.DeepCopyInto(&d.ObjectMeta)
	d.Spec = DrinkSpec{Title: hub.Spec.DisplayNameOrName(), Beverage: hub.Spec.BeverageOrDrink(), SugarCubes: hub.Spec.SugarCubes}
	return nil
}

func toHub(_ context.Context, d *Drink, hub *drinksv1.Drink) error {
	d.DeepCopyInto(&hub.ObjectMeta) // the embedded ObjectMeta's
	hub.Spec = drinksv1.DrinkSpec{DisplayName: d.Spec.Title, Beverage: d.Spec.Beverage, SugarCubes: d.Spec.SugarCubes}
	return nil
}

// Row is v1gamma1's row of the table of versions.
var Row = drinksversions.Version{
	Name: Version, Served: true,
	Fields:  []string{"title", "beverage", "sugarCubes"},
	Renames: map[string]string{"title": "displayName"},
	Layout:  map[string]string{"title": "displayName", "beverage": "beverage", "cubes": "sugarCubes"},
}

// Versions are the built-in Go versions and v1gamma1.
func Versions() drinks.Versions {
	return append(slices.Clone(drinks.Default),
		drinks.Spoke(Version, addToScheme, func() *Drink { return &Drink{} }, fromHub, toHub))
}

// Table is the built-in table of versions and v1gamma1's row.
func Table() drinksversions.Table {
	return append(slices.Clone(drinksversions.Drinks), Row)
}

package render

import (
	"testing"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
)

// TestLayoutsCoverHub: every hub field a layout of the table names has a
// value in the ConfigMap.
func TestLayoutsCoverHub(t *testing.T) {
	spec := &drinksv1.DrinkSpec{DisplayName: "Cup", Beverage: "tea", Size: drinksv1.SizeLarge, SugarCubes: 2, Extras: []string{"mint"},
		Name: "Cup", Drink: "tea"}
	for _, f := range drinksversions.Drinks.Hub().Fields {
		if hubValue(spec, f) == "" {
			t.Errorf("hub field %s has no ConfigMap value", f)
		}
	}
}

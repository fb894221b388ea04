package validation_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
	"github.com/example/myoperator/internal/validation"
)

// v1gamma1 is a fourth Drink version that only tests know: deprecated, it
// names displayName title and has no size or extras.
var v1gamma1 = drinksversions.Version{
	Name: "v1gamma1", Served: true, Deprecated: true,
	DeprecationWarning: "example.com/v1gamma1 Drink is deprecated; use example.com/v1 Drink",
	Fields:             []string{"title", "beverage", "sugarCubes"},
	Renames:            map[string]string{"title": "displayName"},
	Layout:             map[string]string{"title": "displayName", "beverage": "beverage", "cubes": "sugarCubes"},
}

// TestDrinkWarnings pins what a write through each version warns about.
func TestDrinkWarnings(t *testing.T) {
	for _, tc := range []struct {
		version string
		want    []string
	}{
		{"v1alpha1", []string{
			"example.com/v1alpha1 Drink is deprecated: write it as example.com/v1",
			"spec.name is deprecated: use spec.displayName in example.com/v1",
			"spec.drink is deprecated: use spec.beverage in example.com/v1",
		}},
		{"v1beta1", []string{
			"spec.name is deprecated: use spec.displayName in example.com/v1",
			"spec.drink is deprecated: use spec.beverage in example.com/v1",
			"spec.sugar is deprecated: use spec.sugarCubes in example.com/v1",
		}},
		{"v1", nil},
		{"v9", nil},
	} {
		if diff := cmp.Diff(tc.want, validation.DrinkWarnings(tc.version)); diff != "" {
			t.Errorf("DrinkWarnings(%s) (-want +got):\n%s", tc.version, diff)
		}
	}
}

// TestFourthDrinkVersion: with v1gamma1 added to a copy of the table, and
// no change to validation, a Drink may be authored in it, a write through
// it warns as its row says, and errors on the fields it lacks say the value
// came from the conversion-data annotation. The table as built rejects
// all of it, so a list of versions kept here would fail.
func TestFourthDrinkVersion(t *testing.T) {
	four := append(slices.Clone(drinksversions.Drinks), v1gamma1)
	if err := four.Check(); err != nil {
		t.Fatal(err)
	}
	authored := hub(annotate(drinksv1.AuthoredVersionAnnotation, "v1gamma1"))
	badSize := hub(func(d *drinksv1.Drink) { d.Spec.Size = "Huge" })
	const fromAnnotation = "since v1gamma1 has no field for v1's spec.size"
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		table drinksversions.Table
		// wantAuthored: a Drink authored in v1gamma1 is valid.
		wantAuthored bool
		wantWarnings []string
		// wantExplained: an invalid size is blamed on the annotation.
		wantExplained bool
	}{
		{
			name: "four versions", table: four, wantAuthored: true,
			wantWarnings: []string{
				"example.com/v1gamma1 Drink is deprecated: write it as example.com/v1",
				"spec.title is deprecated: use spec.displayName in example.com/v1",
			},
			wantExplained: true,
		},
		{name: "the table as built", table: drinksversions.Drinks},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := validation.NewDrinkValidator(tc.table)
			if errs := v.Validate(authored); (len(errs) == 0) != tc.wantAuthored {
				t.Errorf("authored in v1gamma1: %v, want valid %v", errs, tc.wantAuthored)
			}
			if errs := v.ValidateHub(ctx, nil, authored, "v1gamma1"); (len(errs) == 0) != tc.wantAuthored {
				t.Errorf("hub form authored in v1gamma1: %v, want valid %v", errs, tc.wantAuthored)
			}
			if diff := cmp.Diff(tc.wantWarnings, v.Warnings("v1gamma1")); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			errs := v.ValidateHub(ctx, nil, badSize, "v1gamma1")
			if len(errs) == 0 {
				t.Fatal("size Huge: valid")
			}
			if got := strings.Contains(errs.ToAggregate().Error(), fromAnnotation); got != tc.wantExplained {
				t.Errorf("size Huge through v1gamma1: %v; want %q in it: %v", errs, fromAnnotation, tc.wantExplained)
			}
		})
	}
}

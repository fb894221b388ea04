package webhook_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
	"github.com/example/myoperator/internal/webhook"
)

// TestFourthDrinkVersion: with v1gamma1 added to a copy of the table, and
// no change to the webhooks, an update through it keeps the fields it
// cannot hold, and a write through it gets its warnings and is counted as a
// deprecated write. The table as built knows none of it, so a list of
// versions kept here would fail.
func TestFourthDrinkVersion(t *testing.T) {
	four := append(slices.Clone(drinksversions.Drinks), drinksversions.Version{
		Name: "v1gamma1", Served: true, Deprecated: true,
		DeprecationWarning: "example.com/v1gamma1 Drink is deprecated; use example.com/v1 Drink",
		Fields:             []string{"title", "beverage", "sugarCubes"},
		Renames:            map[string]string{"title": "displayName"},
	})
	if err := four.Check(); err != nil {
		t.Fatal(err)
	}
	full := drinksv1.DrinkSpec{DisplayName: "x", Beverage: "tea", Size: drinksv1.SizeLarge, SugarCubes: 2, Extras: []string{"lemon"}}
	ctx := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation:   admissionv1.Create,
		RequestKind: &metav1.GroupVersionKind{Group: drinksv1.GroupVersion.Group, Version: "v1gamma1", Kind: "Drink"},
	}})
	for _, tc := range []struct {
		name         string
		table        drinksversions.Table
		wantExtras   []string
		wantWarnings admission.Warnings
		wantCounted  float64
	}{
		{
			name: "four versions", table: four, wantExtras: []string{"lemon"},
			wantWarnings: admission.Warnings{
				"example.com/v1gamma1 Drink is deprecated: write it as example.com/v1",
				"spec.title is deprecated: use spec.displayName in example.com/v1",
			},
			wantCounted: 1,
		},
		{name: "the table as built", table: drinksversions.Drinks},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &drinksv1.Drink{Spec: drinksv1.DrinkSpec{DisplayName: "y", Beverage: "tea", SugarCubes: 1}}
			webhook.DefaultDrinkIn(tc.table, d, &drinksv1.Drink{Spec: full}, "v1gamma1", func() drinksv1.Size { return drinksv1.SizeSmall })
			if diff := cmp.Diff(tc.wantExtras, d.Spec.Extras); diff != "" || d.Spec.SugarCubes != 1 {
				t.Errorf("update through v1gamma1: sugarCubes %d (want the request's 1), extras (-want +got):\n%s", d.Spec.SugarCubes, diff)
			}

			before := deprecatedWrites(t, "v1gamma1")
			w := webhook.NewDrinkWebhookIn(tc.table)
			warnings, err := w.ValidateCreate(ctx, &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Name: "gamma"},
				Spec: drinksv1.DrinkSpec{DisplayName: "y", Beverage: "tea", Size: drinksv1.SizeSmall}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantWarnings, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if got := deprecatedWrites(t, "v1gamma1") - before; got != tc.wantCounted {
				t.Errorf("deprecated writes counted: %v, want %v", got, tc.wantCounted)
			}
		})
	}
}

// deprecatedWrites reads myoperator_deprecated_version_writes_total for
// Drinks written through version; 0 when it has no series.
func deprecatedWrites(t *testing.T, version string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "myoperator_deprecated_version_writes_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == "Drink" && labels["version"] == version {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

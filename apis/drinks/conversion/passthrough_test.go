package conversion_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/example/myoperator/apis/drinks/conversion"
	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
	drinksv1beta1 "github.com/example/myoperator/apis/drinks/v1beta1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
)

// full is a hub Drink with every spec field set.
func full() *drinksv1.Drink {
	return &drinksv1.Drink{Spec: drinksv1.DrinkSpec{
		DisplayName: "Morning", Beverage: "tea", Size: drinksv1.SizeLarge, SugarCubes: 2, Extras: []string{"lemon"},
		Name: "Morning", Drink: "tea",
	}}
}

func toMap(t *testing.T, obj any) map[string]any {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestPassThroughNamesMatchConversion: a pass-through gives each spec value
// the name the typed conversion gives it, in both directions, so the API
// server's error for a value that could not be converted names the field the
// client wrote.
func TestPassThroughNamesMatchConversion(t *testing.T) {
	alpha, beta := &drinksv1alpha1.Drink{}, &drinksv1beta1.Drink{}
	if err := conversion.V1ToV1alpha1(ctx, full(), alpha); err != nil {
		t.Fatal(err)
	}
	if err := conversion.V1ToV1beta1(ctx, full(), beta); err != nil {
		t.Fatal(err)
	}
	hubSpec := toMap(t, full())["spec"].(map[string]any)
	for _, tc := range []struct {
		version string
		spec    map[string]any
	}{
		{"v1alpha1", toMap(t, alpha)["spec"].(map[string]any)},
		{"v1beta1", toMap(t, beta)["spec"].(map[string]any)},
	} {
		t.Run(tc.version, func(t *testing.T) {
			// Spoke to hub: the spoke's values under the hub's names.
			obj := map[string]any{"apiVersion": "example.com/" + tc.version, "spec": maps.Clone(tc.spec)}
			if err := conversion.PassThrough(obj, "example.com/v1"); err != nil {
				t.Fatal(err)
			}
			want := maps.Clone(hubSpec)
			for _, f := range drinksversions.Drinks.HubOnly(tc.version) {
				delete(want, f)
			}
			if diff := cmp.Diff(want, obj["spec"]); diff != "" || obj["apiVersion"] != "example.com/v1" {
				t.Errorf("%s to v1: apiVersion %v, spec (-want +got):\n%s", tc.version, obj["apiVersion"], diff)
			}
			// Hub to spoke: the hub's values under the spoke's names; the
			// fields the spoke lacks stay for the API server to prune.
			obj = map[string]any{"apiVersion": "example.com/v1", "spec": maps.Clone(hubSpec)}
			if err := conversion.PassThrough(obj, "example.com/"+tc.version); err != nil {
				t.Fatal(err)
			}
			got := obj["spec"].(map[string]any)
			spoke, _ := drinksversions.Drinks.Lookup(tc.version)
			for _, f := range drinksversions.Drinks.HubOnly(tc.version) {
				if !slices.Contains(spoke.Fields, f) { // the hub's course fields have made way for the spoke's own
					delete(got, f)
				}
			}
			if diff := cmp.Diff(tc.spec, got); diff != "" {
				t.Errorf("v1 to %s: spec (-want +got):\n%s", tc.version, diff)
			}
		})
	}
	// The hub's course fields alone stand for the fields they name.
	obj := map[string]any{"apiVersion": "example.com/v1", "spec": map[string]any{"name": 7, "drink": "tea", "size": "Huge"}}
	if err := conversion.PassThrough(obj, "example.com/v1beta1"); err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"name": 7, "drink": "tea", "size": "Huge"}; !cmp.Equal(want, obj["spec"]) {
		t.Errorf("course-form v1 to v1beta1: spec %v, want %v", obj["spec"], want)
	}
	// Spoke to spoke goes through the hub's names.
	obj = map[string]any{"apiVersion": "example.com/v1beta1", "spec": map[string]any{"name": "x", "drink": "tea", "sugar": "lots"}}
	if err := conversion.PassThrough(obj, "example.com/v1alpha1"); err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"name": "x", "drink": "tea", "sugarCubes": "lots"}; !cmp.Equal(want, obj["spec"]) {
		t.Errorf("v1beta1 to v1alpha1: spec %v, want %v", obj["spec"], want)
	}
}

// TestPassThroughKeepsValues: values the converter could not take reach the
// API server as they were written, and so does everything outside spec.
func TestPassThroughKeepsValues(t *testing.T) {
	obj := map[string]any{
		"apiVersion": "example.com/v1beta1", "kind": "Drink",
		"metadata": map[string]any{"name": "d", "annotations": map[string]any{drinksv1.ConversionDataAnnotation: "{not json"}},
		"spec":     map[string]any{"name": 7, "drink": []any{"tea"}, "size": "Huge", "sugar": "lots"},
		"status":   "odd",
	}
	if err := conversion.PassThrough(obj, "example.com/v1"); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"apiVersion": "example.com/v1", "kind": "Drink",
		"metadata": map[string]any{"name": "d", "annotations": map[string]any{drinksv1.ConversionDataAnnotation: "{not json"}},
		"spec":     map[string]any{"displayName": 7, "beverage": []any{"tea"}, "size": "Huge", "sugarCubes": "lots"},
		"status":   "odd",
	}
	if diff := cmp.Diff(want, obj); diff != "" {
		t.Errorf("pass-through (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"example.com/v9", "other.example.com/v1", "", "a/b/c"} {
		if err := conversion.PassThrough(map[string]any{"apiVersion": "example.com/v1"}, bad); err == nil {
			t.Errorf("pass-through to %q: no error", bad)
		}
	}
}

// TestHubOnlyFields: the fields named as kept in the annotation are exactly
// those that the conversion keeps there.
func TestHubOnlyFields(t *testing.T) {
	keys := func(obj interface{ GetAnnotations() map[string]string }) []string {
		m := map[string]any{}
		if err := json.Unmarshal([]byte(obj.GetAnnotations()[drinksv1.ConversionDataAnnotation]), &m); err != nil {
			t.Fatal(err)
		}
		var k []string
		for f := range m {
			k = append(k, f)
		}
		slices.Sort(k)
		return k
	}
	alpha, beta := &drinksv1alpha1.Drink{}, &drinksv1beta1.Drink{}
	if err := conversion.V1ToV1alpha1(ctx, full(), alpha); err != nil {
		t.Fatal(err)
	}
	if err := conversion.V1ToV1beta1(ctx, full(), beta); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		version string
		kept    []string
	}{{"v1alpha1", keys(alpha)}, {"v1beta1", keys(beta)}, {"v1", nil}} {
		got := drinksversions.Drinks.HubOnly(tc.version)
		slices.Sort(got)
		if !slices.Equal(got, tc.kept) {
			t.Errorf("HubOnlyFields(%s) = %v, conversion keeps %v", tc.version, got, tc.kept)
		}
	}
}

package drinks_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/example/myoperator/apis/drinks"
	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
	"github.com/example/myoperator/test/framework/drinkgamma"
)

// The Go types and the table of versions name the same versions, the hub
// first in both.
func TestNamesMatchTheTable(t *testing.T) {
	got, want := drinks.Default.Names(), drinksversions.Drinks.Names()
	if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Errorf("Go versions %v, table %v", got, want)
	}
	if got[0] != drinksversions.Drinks.Hub().Name {
		t.Errorf("first Go version %q, want the hub %q", got[0], drinksversions.Drinks.Hub().Name)
	}
}

func TestAddToSchemeAddsEveryVersion(t *testing.T) {
	s := runtime.NewScheme()
	if err := drinks.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, v := range drinksversions.Drinks.Names() {
		gvk := drinksv1.GroupVersion.WithKind("Drink").GroupKind().WithVersion(v)
		if _, err := s.New(gvk); err != nil {
			t.Errorf("%s: %v", gvk, err)
		}
		if _, err := s.New(gvk.GroupVersion().WithKind("DrinkList")); err != nil {
			t.Errorf("%s list: %v", gvk, err)
		}
	}
}

// Convert goes from every version to every other and back to the hub
// without losing a field, and labels what it returns with its version.
func TestConvertBetweenEveryPair(t *testing.T) {
	ctx := context.Background()
	hub := &drinksv1.Drink{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tea", Labels: map[string]string{"k": "v"}},
		Spec: drinksv1.DrinkSpec{DisplayName: "Cup", Beverage: "tea", Size: drinksv1.SizeLarge, SugarCubes: 2,
			Extras: []string{"mint"}, Name: "cup", Drink: "chai"},
		Status: drinksv1.DrinkStatus{ConfigMapName: "tea", ObservedGeneration: 3},
	}
	for _, from := range drinks.Default.Names() {
		for _, to := range drinks.Default.Names() {
			t.Run(from+"->"+to, func(t *testing.T) {
				src, err := drinks.Default.Convert(ctx, hub, from)
				if err != nil {
					t.Fatal(err)
				}
				out, err := drinks.Default.Convert(ctx, src, to)
				if err != nil {
					t.Fatal(err)
				}
				if got := out.GetObjectKind().GroupVersionKind(); got.Version != to || got.Kind != "Drink" {
					t.Errorf("converted object says %s, want Drink %s", got, to)
				}
				back, err := drinks.Default.Convert(ctx, out, drinksv1.GroupVersion.Version)
				if err != nil {
					t.Fatal(err)
				}
				back.GetObjectKind().SetGroupVersionKind(hub.GroupVersionKind())
				if diff := cmp.Diff(hub, back); diff != "" {
					t.Errorf("%s -> %s -> v1 lost something (-want +got):\n%s", from, to, diff)
				}
			})
		}
	}
}

func TestConvertRefuses(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		obj  runtime.Object
		to   string
		want string
	}{
		{"an unknown version", &drinksv1.Drink{}, "v2", `no Drink version "v2"`},
		{"an object of another kind", &corev1.ConfigMap{}, "v1", "is not a Drink"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := drinks.Default.Convert(ctx, tc.obj, tc.to)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
	if _, err := drinks.Default.New("v0"); err == nil {
		t.Error("New(v0) made an object")
	}
}

// TestFourthGoVersion: a fourth version added to the list (its Go type and
// conversion, test/framework/drinkgamma) is registered by AddToScheme,
// converts to and from every other version through the hub, and joins the
// webhook's converter, with no change outside the list.
func TestFourthGoVersion(t *testing.T) {
	ctx := context.Background()
	four := drinkgamma.Versions()
	if diff := cmp.Diff(append(drinks.Default.Names(), drinkgamma.Version), four.Names()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	s := runtime.NewScheme()
	if err := four.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if _, err := s.New(drinkgamma.GroupVersion.WithKind("Drink")); err != nil {
		t.Errorf("the scheme lacks the fourth version: %v", err)
	}
	if _, err := four.NewConverter()(s); err != nil {
		t.Errorf("the webhook's converter: %v", err)
	}
	gamma := &drinkgamma.Drink{ObjectMeta: metav1.ObjectMeta{Name: "tea"},
		Spec: drinkgamma.DrinkSpec{Title: "Cup", Beverage: "tea", SugarCubes: 2}}
	for _, to := range drinks.Default.Names() {
		out, err := four.Convert(ctx, gamma, to)
		if err != nil {
			t.Fatalf("v1gamma1 -> %s: %v", to, err)
		}
		back, err := four.Convert(ctx, out, drinkgamma.Version)
		if err != nil {
			t.Fatalf("%s -> v1gamma1: %v", to, err)
		}
		if diff := cmp.Diff(gamma.Spec, back.(*drinkgamma.Drink).Spec); diff != "" {
			t.Errorf("v1gamma1 -> %s -> v1gamma1 (-want +got):\n%s", to, diff)
		}
	}
	if _, err := drinks.Default.Convert(ctx, gamma, "v1"); err == nil {
		t.Error("the built-in list converted a v1gamma1 Drink it does not know")
	}
}

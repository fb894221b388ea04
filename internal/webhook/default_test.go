package webhook_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/internal/webhook"
)

// TestDefaultDrink: the table of what the Drink defaulter does, and whether
// it asks for the default size (a read of the OperatorConfig from the API
// server inside the admission, which a write that gives or keeps its size
// must not pay for); applying it twice gives the same object.
func TestDefaultDrink(t *testing.T) {
	withAuthored := func(v string, spec drinksv1.DrinkSpec) *drinksv1.Drink {
		d := &drinksv1.Drink{Spec: spec}
		if v != "" {
			d.Annotations = map[string]string{drinksv1.AuthoredVersionAnnotation: v}
		}
		return d
	}
	base := drinksv1.DrinkSpec{DisplayName: "x", Beverage: "tea"}
	full := drinksv1.DrinkSpec{DisplayName: "x", Beverage: "tea", Size: drinksv1.SizeLarge, SugarCubes: 2, Extras: []string{"lemon"}}
	tests := []struct {
		name    string
		d, old  *drinksv1.Drink
		version string
		want    *drinksv1.Drink
		asks    bool
	}{
		{"create without size", withAuthored("", base), nil, "v1beta1",
			withAuthored("v1beta1", drinksv1.DrinkSpec{DisplayName: "x", Beverage: "tea", Size: drinksv1.SizeSmall}), true},
		{"create through v1alpha1, which has no size", withAuthored("", base), nil, "v1alpha1",
			withAuthored("v1alpha1", drinksv1.DrinkSpec{DisplayName: "x", Beverage: "tea", Size: drinksv1.SizeSmall}), true},
		{"create with a size", withAuthored("", full), nil, "v1", withAuthored("v1", full), false},
		{"update through v1alpha1 keeps what v1alpha1 cannot say", withAuthored("", drinksv1.DrinkSpec{DisplayName: "y", Beverage: "tea"}),
			withAuthored("v1", full), "v1alpha1",
			withAuthored("v1alpha1", drinksv1.DrinkSpec{DisplayName: "y", Beverage: "tea", Size: drinksv1.SizeLarge, SugarCubes: 2, Extras: []string{"lemon"}}), false},
		{"update through v1beta1 keeps extras", withAuthored("v1", drinksv1.DrinkSpec{DisplayName: "x", Beverage: "tea", Size: drinksv1.SizeLarge, SugarCubes: 2}),
			withAuthored("v1", full), "v1beta1", withAuthored("v1", full), false},
		{"metadata-only update keeps the authored version", withAuthored("v1", full), withAuthored("v1alpha1", full), "v1",
			withAuthored("v1alpha1", full), false},
		{"legacy object without record stays without", withAuthored("", full), withAuthored("", full), "v1", withAuthored("", full), false},
		{"omitted size on update keeps the old size", withAuthored("", base), withAuthored("v1", full), "v1",
			withAuthored("v1", drinksv1.DrinkSpec{DisplayName: "x", Beverage: "tea", Size: drinksv1.SizeLarge}), false},
		{"omitted size on update of a Drink that never had one", withAuthored("", base), withAuthored("v1alpha1", base), "v1",
			withAuthored("v1alpha1", drinksv1.DrinkSpec{DisplayName: "x", Beverage: "tea", Size: drinksv1.SizeSmall}), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			asked := false
			small := func() drinksv1.Size { asked = true; return drinksv1.SizeSmall }
			webhook.DefaultDrink(tc.d, tc.old, tc.version, small)
			if diff := cmp.Diff(tc.want, tc.d); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
			if asked != tc.asks {
				t.Errorf("asked for the default size: %t, want %t", asked, tc.asks)
			}
			again := tc.d.DeepCopy()
			webhook.DefaultDrink(again, tc.old, tc.version, small)
			if diff := cmp.Diff(tc.d, again); diff != "" {
				t.Errorf("not idempotent (-once +twice):\n%s", diff)
			}
		})
	}
}

func TestDefaultGuestbook(t *testing.T) {
	g := &webappv1.Guestbook{Spec: webappv1.GuestbookSpec{Size: 1, ConfigMapName: "cm"}}
	webhook.DefaultGuestbook(g)
	webhook.DefaultGuestbook(g)
	if g.Spec.Alias != webappv1.AliasName {
		t.Errorf("alias %q, want Name", g.Spec.Alias)
	}
}

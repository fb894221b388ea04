package validation_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/validation"
)

// hub is a valid hub Drink changed by each of edits.
func hub(edits ...func(*drinksv1.Drink)) *drinksv1.Drink {
	d := &drinksv1.Drink{
		TypeMeta:   metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Drink"},
		ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns", Generation: 1},
		Spec:       drinksv1.DrinkSpec{DisplayName: "x", Beverage: "tea", Size: drinksv1.SizeMedium},
	}
	for _, e := range edits {
		e(d)
	}
	return d
}

func extras(e ...string) func(*drinksv1.Drink) { return func(d *drinksv1.Drink) { d.Spec.Extras = e } }

func annotate(k, v string) func(*drinksv1.Drink) {
	return func(d *drinksv1.Drink) {
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[k] = v
	}
}

// TestValidateDrinkHubCreate: every rule of the v1 CRD and every Go rule
// holds for the hub form, whatever version it was written in; errors on
// fields the version lacks say that the value came from the annotation.
func TestValidateDrinkHubCreate(t *testing.T) {
	const note = "came from the metadata.annotations[example.com/conversion-data] annotation, since v1alpha1 has no field for v1's spec."
	tests := []struct {
		name    string
		version string
		d       *drinksv1.Drink
		want    []string // substrings of the error; none means valid
	}{
		{"valid", "v1", hub(), nil},
		{"valid with extras", "v1alpha1", hub(extras("ice", "lemon")), nil},
		{"size from forged annotation", "v1alpha1", hub(func(d *drinksv1.Drink) { d.Spec.Size = "Huge" }),
			[]string{`spec.size: Unsupported value: "Huge"`, note + "size"}},
		{"sugar from forged annotation", "v1alpha1", hub(func(d *drinksv1.Drink) { d.Spec.SugarCubes = -2 }),
			[]string{"spec.sugarCubes: Invalid value: -2", "greater than or equal to 0", note + "sugarCubes"}},
		{"extras repeating the beverage, through v1beta1", "v1beta1", hub(extras("tea")),
			[]string{"spec.extras: Invalid value", "extras must not repeat the beverage", "since v1beta1 has no field for v1's spec.extras"}},
		{"the course's name differing from displayName, through v1alpha1", "v1alpha1", hub(func(d *drinksv1.Drink) { d.Spec.Name = "Other" }),
			[]string{"spec.name: Invalid value", "name and displayName differ", note + "name"}},
		{"duplicate extras", "v1alpha1", hub(extras("ice", "ice")), []string{`spec.extras[1]: Duplicate value: "ice"`, note + "extras"}},
		{"small with four extras", "v1alpha1", hub(func(d *drinksv1.Drink) { d.Spec.Size = drinksv1.SizeSmall }, extras("a", "b", "c", "d")),
			[]string{"spec.extras: Too many: 4", "a Small drink takes at most 3 extras", note + "extras"}},
		{"size breaking a rule through v1beta1 names no annotation", "v1beta1", hub(func(d *drinksv1.Drink) { d.Spec.Size = "Huge" }),
			[]string{`spec.size: Unsupported value: "Huge"`}},
		{"blank display name", "v1", hub(func(d *drinksv1.Drink) { d.Spec.DisplayName = "\u200b" }),
			[]string{"spec.displayName", "displayName must not be blank"}},
		{"conversion data on the hub", "v1", hub(annotate(drinksv1.ConversionDataAnnotation, `{"size":"Huge"}`)),
			[]string{"metadata.annotations[example.com/conversion-data]: Forbidden: belongs to the operator"}},
		{"conversion data that does not decode", "v1alpha1", hub(annotate(drinksv1.ConversionDataAnnotation, `{"sugarCubes":"lots"}`)),
			[]string{"metadata.annotations[example.com/conversion-data]: Forbidden", "does not even decode", "sugarCubes"}},
		{"forged authored version", "v1", hub(annotate(drinksv1.AuthoredVersionAnnotation, "v2")),
			[]string{`metadata.annotations[example.com/authored-version]: Unsupported value: "v2"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := validation.ValidateDrinkHub(context.Background(), nil, tc.d, tc.version)
			expectErrors(t, errs.ToAggregate(), tc.want)
		})
	}
	// Errors on fields the version holds must not blame the annotation.
	errs := validation.ValidateDrinkHub(context.Background(), nil, hub(func(d *drinksv1.Drink) { d.Spec.Size = "Huge" }), "v1beta1")
	if strings.Contains(errs.ToAggregate().Error(), "annotation") {
		t.Errorf("v1beta1 holds size, yet: %v", errs)
	}
}

// TestValidateDrinkHubRatchets: on update, a rule broken only by values
// that did not change is not an error (the Drink was stored before the rule
// existed); changing the offending value is checked.
func TestValidateDrinkHubRatchets(t *testing.T) {
	blank := func(d *drinksv1.Drink) { d.Spec.DisplayName = "\u200b" }
	small := func(d *drinksv1.Drink) { d.Spec.Size = drinksv1.SizeSmall }
	label := func(d *drinksv1.Drink) { d.Labels = map[string]string{"team": "a"} }
	huge := func(d *drinksv1.Drink) { d.Spec.Size = "Huge" }
	sweet := func(d *drinksv1.Drink) { d.Spec.SugarCubes = 20 }
	migrated := annotate("example.com/migrated", "true")
	tests := []struct {
		name     string
		old, new *drinksv1.Drink
		want     []string
	}{
		{"label added to a blank name", hub(blank), hub(blank, label), nil},
		{"label added to an unknown size and too much sugar", hub(huge, sweet), hub(huge, sweet, label), nil},
		{"unknown size changed to another", hub(huge), hub(func(d *drinksv1.Drink) { d.Spec.Size = "Tiny" }),
			[]string{`spec.size: Unsupported value: "Tiny"`}},
		{"annotation added to extras repeating the beverage", hub(extras("tea")), hub(extras("tea"), migrated), nil},
		{"label added to a small drink with four extras", hub(small, extras("a", "b", "c", "d")), hub(small, extras("a", "b", "c", "d"), label), nil},
		{"label added to duplicate extras", hub(extras("a", "a")), hub(extras("a", "a"), label), nil},
		{"label added next to conversion data on the hub",
			hub(annotate(drinksv1.ConversionDataAnnotation, "x")), hub(annotate(drinksv1.ConversionDataAnnotation, "x"), label), nil},
		{"sugar changed next to a blank name", hub(blank), hub(blank, func(d *drinksv1.Drink) { d.Spec.SugarCubes = 2 }), nil},
		{"blank name changed to another blank", hub(blank), hub(func(d *drinksv1.Drink) { d.Spec.DisplayName = " \u200b" }),
			[]string{"spec.displayName", "must not be blank"}},
		{"extra added to a small drink with four", hub(small, extras("a", "b", "c", "d")), hub(small, extras("a", "b", "c", "d", "e")),
			[]string{"spec.extras: Too many: 5"}},
		{"drink made small with four extras", hub(extras("a", "b", "c", "d")), hub(small, extras("a", "b", "c", "d")),
			[]string{"spec.extras: Too many: 4"}},
		{"extra added to duplicates", hub(extras("a", "a")), hub(extras("a", "a", "b")), []string{"spec.extras[1]: Duplicate value"}},
		{"conversion data changed on the hub",
			hub(annotate(drinksv1.ConversionDataAnnotation, "x")), hub(annotate(drinksv1.ConversionDataAnnotation, "y")),
			[]string{"metadata.annotations[example.com/conversion-data]: Forbidden"}},
		{"conversion data added", hub(), hub(annotate(drinksv1.ConversionDataAnnotation, "{}")),
			[]string{"metadata.annotations[example.com/conversion-data]: Forbidden"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := validation.ValidateDrinkHub(context.Background(), tc.old, tc.new, "v1")
			expectErrors(t, errs.ToAggregate(), tc.want)
		})
	}
}

func expectErrors(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("valid, got %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

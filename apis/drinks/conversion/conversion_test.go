package conversion_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/randfill"

	"github.com/example/myoperator/apis/drinks/conversion"
	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
	drinksv1beta1 "github.com/example/myoperator/apis/drinks/v1beta1"
)

// iterations per direction and spoke: at least 10,000, so that the random
// objects reach the rare shapes (empty, nil and repeated values).
const iterations = 10000

// spoke is one Drink version that converts through the hub.
type spoke struct {
	name   string
	new    func() runtime.Object
	toHub  func(src any, dst *drinksv1.Drink) error
	toThis func(src *drinksv1.Drink, dst any) error
	meta   func(obj any) *metav1.ObjectMeta
}

var ctx = context.Background()

var spokes = []spoke{
	{
		name: "v1alpha1",
		new:  func() runtime.Object { return &drinksv1alpha1.Drink{} },
		toHub: func(src any, dst *drinksv1.Drink) error {
			return conversion.V1alpha1ToV1(ctx, src.(*drinksv1alpha1.Drink), dst)
		},
		toThis: func(src *drinksv1.Drink, dst any) error {
			return conversion.V1ToV1alpha1(ctx, src, dst.(*drinksv1alpha1.Drink))
		},
		meta: func(obj any) *metav1.ObjectMeta { return &obj.(*drinksv1alpha1.Drink).ObjectMeta },
	},
	{
		name: "v1beta1",
		new:  func() runtime.Object { return &drinksv1beta1.Drink{} },
		toHub: func(src any, dst *drinksv1.Drink) error {
			return conversion.V1beta1ToV1(ctx, src.(*drinksv1beta1.Drink), dst)
		},
		toThis: func(src *drinksv1.Drink, dst any) error {
			return conversion.V1ToV1beta1(ctx, src, dst.(*drinksv1beta1.Drink))
		},
		meta: func(obj any) *metav1.ObjectMeta { return &obj.(*drinksv1beta1.Drink).ObjectMeta },
	},
}

func filler(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.3).NumElements(0, 4)
}

// fill randomizes obj except its TypeMeta, which the conversion webhook
// sets from the requested version, not from the converter.
func fill(f *randfill.Filler, obj runtime.Object) {
	f.Fill(obj)
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
}

// TestSpokeHubSpoke: any spoke object, converted to the hub and back, is
// unchanged, whether or not it already carries conversion data.
func TestSpokeHubSpoke(t *testing.T) {
	for _, s := range spokes {
		t.Run(s.name, func(t *testing.T) {
			f := filler(1)
			for i := range iterations {
				orig := s.new()
				switch {
				case i == 0: // an empty object
				case i%3 == 0:
					// A spoke that already carries conversion data, as the
					// API server serves a v1 object with hub-only fields.
					hub := &drinksv1.Drink{}
					fill(f, hub)
					if err := s.toThis(hub, orig); err != nil {
						t.Fatalf("iteration %d: hub to %s: %v", i, s.name, err)
					}
				default:
					fill(f, orig)
				}
				hub := &drinksv1.Drink{}
				if err := s.toHub(orig, hub); err != nil {
					t.Fatalf("iteration %d: %s to hub: %v", i, s.name, err)
				}
				back := s.new()
				if err := s.toThis(hub, back); err != nil {
					t.Fatalf("iteration %d: hub to %s: %v", i, s.name, err)
				}
				if !apiequality.Semantic.DeepEqual(orig, back) {
					t.Fatalf("iteration %d: %s -> v1 -> %s changed the object (-orig +back):\n%s",
						i, s.name, s.name, cmp.Diff(orig, back))
				}
			}
		})
	}
}

// TestHubSpokeHub: any hub object, served in a spoke and converted back, is
// unchanged: fields the spoke cannot hold survive, and so does a
// conversion-data annotation that the hub object itself carried.
func TestHubSpokeHub(t *testing.T) {
	for _, s := range spokes {
		t.Run(s.name, func(t *testing.T) {
			f := filler(2)
			for i := range iterations {
				orig := &drinksv1.Drink{}
				switch {
				case i == 0: // an empty object
				case i%3 == 0:
					fill(f, orig)
					if orig.Annotations == nil {
						orig.Annotations = map[string]string{}
					}
					var v string
					f.Fill(&v)
					orig.Annotations[drinksv1.ConversionDataAnnotation] = v
				default:
					fill(f, orig)
				}
				mid := s.new()
				if err := s.toThis(orig, mid); err != nil {
					t.Fatalf("iteration %d: hub to %s: %v", i, s.name, err)
				}
				back := &drinksv1.Drink{}
				if err := s.toHub(mid, back); err != nil {
					t.Fatalf("iteration %d: %s to hub: %v", i, s.name, err)
				}
				if !apiequality.Semantic.DeepEqual(orig, back) {
					t.Fatalf("iteration %d: v1 -> %s -> v1 changed the object (-orig +back):\n%s",
						i, s.name, cmp.Diff(orig, back))
				}
			}
		})
	}
}

// TestFieldMapping pins the renames, so that a round trip that is lossless
// only because both directions are equally wrong still fails.
func TestFieldMapping(t *testing.T) {
	hub := &drinksv1.Drink{Spec: drinksv1.DrinkSpec{
		DisplayName: "Morning", Beverage: "tea", Size: drinksv1.SizeLarge, SugarCubes: 2, Extras: []string{"lemon"},
	}}
	alpha := &drinksv1alpha1.Drink{}
	if err := conversion.V1ToV1alpha1(ctx, hub, alpha); err != nil {
		t.Fatal(err)
	}
	if want := (drinksv1alpha1.DrinkSpec{Name: "Morning", Drink: "tea"}); alpha.Spec != want {
		t.Errorf("v1alpha1 spec = %+v, want %+v", alpha.Spec, want)
	}
	if got, want := alpha.Annotations[drinksv1.ConversionDataAnnotation],
		`{"size":"Large","sugarCubes":2,"extras":["lemon"]}`; got != want {
		t.Errorf("v1alpha1 conversion data = %s, want %s", got, want)
	}
	beta := &drinksv1beta1.Drink{}
	if err := conversion.V1ToV1beta1(ctx, hub, beta); err != nil {
		t.Fatal(err)
	}
	if want := (drinksv1beta1.DrinkSpec{Name: "Morning", Drink: "tea", Size: "Large", Sugar: 2}); beta.Spec != want {
		t.Errorf("v1beta1 spec = %+v, want %+v", beta.Spec, want)
	}
	if got, want := beta.Annotations[drinksv1.ConversionDataAnnotation], `{"extras":["lemon"]}`; got != want {
		t.Errorf("v1beta1 conversion data = %s, want %s", got, want)
	}

	// A spoke edit wins over the data kept for fields the spoke can hold.
	beta.Spec.Sugar = 5
	beta.Spec.Drink = "coffee"
	back := &drinksv1.Drink{}
	if err := conversion.V1beta1ToV1(ctx, beta, back); err != nil {
		t.Fatal(err)
	}
	want := drinksv1.DrinkSpec{DisplayName: "Morning", Beverage: "coffee", Size: drinksv1.SizeLarge, SugarCubes: 5, Extras: []string{"lemon"}}
	if diff := cmp.Diff(want, back.Spec); diff != "" {
		t.Errorf("v1beta1 edit to v1 (-want +got):\n%s", diff)
	}
	if _, ok := back.Annotations[drinksv1.ConversionDataAnnotation]; ok {
		t.Errorf("hub kept the conversion-data annotation: %v", back.Annotations)
	}
}

// TestCourseForm: a Drink in v1's course form reads in a spoke with its
// values under the spoke's own names and comes back in the course form,
// whether it held the course's fields alone (as the course's operator
// stored it) or beside displayName and beverage (as the webhook keeps it).
func TestCourseForm(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hub    drinksv1.DrinkSpec
		edited drinksv1.DrinkSpec // after a v1beta1 client set drink to coffee
	}{
		{
			name:   "course fields alone",
			hub:    drinksv1.DrinkSpec{Name: "my-drink", Drink: "tea"},
			edited: drinksv1.DrinkSpec{Name: "my-drink", Drink: "coffee"},
		},
		{
			name:   "both forms",
			hub:    drinksv1.DrinkSpec{Name: "my-drink", Drink: "tea", DisplayName: "my-drink", Beverage: "tea", Size: drinksv1.SizeSmall},
			edited: drinksv1.DrinkSpec{Name: "my-drink", Drink: "tea", DisplayName: "my-drink", Beverage: "coffee", Size: drinksv1.SizeSmall},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			beta := &drinksv1beta1.Drink{}
			if err := conversion.V1ToV1beta1(ctx, &drinksv1.Drink{Spec: tc.hub}, beta); err != nil {
				t.Fatal(err)
			}
			if beta.Spec.Name != "my-drink" || beta.Spec.Drink != "tea" {
				t.Errorf("v1beta1 spec %+v, want name my-drink and drink tea", beta.Spec)
			}
			back := &drinksv1.Drink{}
			if err := conversion.V1beta1ToV1(ctx, beta, back); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.hub, back.Spec); diff != "" {
				t.Errorf("v1 -> v1beta1 -> v1 (-want +got):\n%s", diff)
			}
			// The webhook then makes the two forms agree again (the changed one wins).
			beta.Spec.Drink = "coffee"
			if err := conversion.V1beta1ToV1(ctx, beta, back); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.edited, back.Spec); diff != "" {
				t.Errorf("v1beta1 edit to v1 (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCorruptData: conversion data that cannot be decoded is an error that
// names the annotation, never a silent loss.
func TestCorruptData(t *testing.T) {
	alpha := &drinksv1alpha1.Drink{ObjectMeta: metav1.ObjectMeta{
		Annotations: map[string]string{drinksv1.ConversionDataAnnotation: "{not json"},
	}}
	err := conversion.V1alpha1ToV1(ctx, alpha, &drinksv1.Drink{})
	if err == nil {
		t.Fatal("corrupt conversion data converted without error")
	}
	if want := drinksv1.ConversionDataAnnotation; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %s", err, want)
	}
}

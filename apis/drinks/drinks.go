package drinks

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crconversion "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	"github.com/example/myoperator/apis/drinks/conversion"
	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
	drinksv1beta1 "github.com/example/myoperator/apis/drinks/v1beta1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
)

// goVersion is one Drink version as Go holds it: the package that registers
// it, an empty object of it, and its conversion through the hub.
type goVersion struct {
	name        string
	addToScheme func(*runtime.Scheme) error
	newObject   func() client.Object
	// toHub and fromHub return false when obj is not of this version.
	toHub   func(ctx context.Context, obj runtime.Object, hub *drinksv1.Drink) (bool, error)
	fromHub func(ctx context.Context, hub *drinksv1.Drink, obj runtime.Object) error
	// spoke is the webhook's converter of this version; nil for the hub.
	spoke crconversion.SpokeConverter[*drinksv1.Drink]
}

// goVersions lists every Drink version that has Go types, the hub first.
// apis/drinks/versions says what each one serves and holds; a test keeps the
// two lists to the same names.
var goVersions = []goVersion{
	{
		name:        drinksv1.GroupVersion.Version,
		addToScheme: drinksv1.AddToScheme,
		newObject:   func() client.Object { return &drinksv1.Drink{} },
		toHub: func(_ context.Context, obj runtime.Object, hub *drinksv1.Drink) (bool, error) {
			d, ok := obj.(*drinksv1.Drink)
			if ok {
				d.DeepCopyInto(hub)
			}
			return ok, nil
		},
		fromHub: func(_ context.Context, hub *drinksv1.Drink, obj runtime.Object) error {
			hub.DeepCopyInto(obj.(*drinksv1.Drink))
			return nil
		},
	},
	spoke(drinksv1beta1.GroupVersion.Version, drinksv1beta1.AddToScheme,
		func() *drinksv1beta1.Drink { return &drinksv1beta1.Drink{} }, conversion.V1ToV1beta1, conversion.V1beta1ToV1),
	spoke(drinksv1alpha1.GroupVersion.Version, drinksv1alpha1.AddToScheme,
		func() *drinksv1alpha1.Drink { return &drinksv1alpha1.Drink{} }, conversion.V1ToV1alpha1, conversion.V1alpha1ToV1),
}

// spoke is the goVersion of a spoke whose typed conversion functions are
// fromHub and toHub.
func spoke[T client.Object](name string, addToScheme func(*runtime.Scheme) error, newT func() T,
	fromHub func(context.Context, *drinksv1.Drink, T) error, toHub func(context.Context, T, *drinksv1.Drink) error,
) goVersion {
	return goVersion{
		name:        name,
		addToScheme: addToScheme,
		newObject:   func() client.Object { return newT() },
		toHub: func(ctx context.Context, obj runtime.Object, hub *drinksv1.Drink) (bool, error) {
			t, ok := obj.(T)
			if !ok {
				return false, nil
			}
			return true, toHub(ctx, t, hub)
		},
		fromHub: func(ctx context.Context, hub *drinksv1.Drink, obj runtime.Object) error {
			return fromHub(ctx, hub, obj.(T))
		},
		spoke: crconversion.NewSpokeConverter(newT(), fromHub, toHub),
	}
}

// AddToScheme adds every Drink version to s.
func AddToScheme(s *runtime.Scheme) error {
	for _, v := range goVersions {
		if err := v.addToScheme(s); err != nil {
			return err
		}
	}
	return nil
}

// NewConverter returns the constructor of the Drink converter that the
// webhook builder registers on the /convert endpoint: every spoke through
// the hub.
func NewConverter() func(*runtime.Scheme) (crconversion.Converter, error) {
	var spokes []crconversion.SpokeConverter[*drinksv1.Drink]
	for _, v := range goVersions {
		if v.spoke != nil {
			spokes = append(spokes, v.spoke)
		}
	}
	return crconversion.NewHubSpokeConverter(&drinksv1.Drink{}, spokes...)
}

// New returns an empty Drink of version (for example "v1beta1"); an error
// naming the versions there are when no Go type has that version.
func New(version string) (client.Object, error) {
	v, err := lookup(version)
	if err != nil {
		return nil, err
	}
	return v.newObject(), nil
}

// Convert returns obj, a typed Drink of any version, converted to version
// to through the hub, with its apiVersion and kind set. Nothing is lost: a
// spoke keeps what it cannot hold in the conversion-data annotation.
func Convert(ctx context.Context, obj runtime.Object, to string) (client.Object, error) {
	target, err := lookup(to)
	if err != nil {
		return nil, err
	}
	hub := &drinksv1.Drink{}
	converted := false
	for _, v := range goVersions {
		ok, err := v.toHub(ctx, obj, hub)
		if err != nil {
			return nil, err
		}
		if converted = ok; ok {
			break
		}
	}
	if !converted {
		return nil, fmt.Errorf("%T is not a Drink of any version (%s)", obj, drinksversions.List(Names()))
	}
	out := target.newObject()
	if err := target.fromHub(ctx, hub, out); err != nil {
		return nil, err
	}
	out.GetObjectKind().SetGroupVersionKind(drinksv1.GroupVersion.WithKind("Drink").GroupKind().WithVersion(to))
	return out, nil
}

// Names are the versions that have Go types, the hub first.
func Names() []string {
	names := make([]string, len(goVersions))
	for i, v := range goVersions {
		names[i] = v.name
	}
	return names
}

func lookup(version string) (goVersion, error) {
	for _, v := range goVersions {
		if v.name == version {
			return v, nil
		}
	}
	return goVersion{}, fmt.Errorf("no Drink version %q: the versions are %s", version, drinksversions.List(Names()))
}

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

// GoVersion is one Drink version as Go holds it: the package that registers
// it, an empty object of it, and its conversion through the hub. Spoke
// makes one.
type GoVersion struct {
	name        string
	addToScheme func(*runtime.Scheme) error
	newObject   func() client.Object
	// toHub and fromHub return false when obj is not of this version.
	toHub   func(ctx context.Context, obj runtime.Object, hub *drinksv1.Drink) (bool, error)
	fromHub func(ctx context.Context, hub *drinksv1.Drink, obj runtime.Object) error
	// spoke is the webhook's converter of this version; nil for the hub.
	spoke crconversion.SpokeConverter[*drinksv1.Drink]
}

// Versions is a list of Drink versions with Go types, the hub first.
type Versions []GoVersion

// Default lists every Drink version that has Go types: what the manager,
// the plugin and the tools use. apis/drinks/versions says what each one
// serves and holds; a test keeps the two lists to the same names. A new
// version adds its row here and there, and nothing outside apis/drinks.
var Default = Versions{
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
	Spoke(drinksv1beta1.GroupVersion.Version, drinksv1beta1.AddToScheme,
		func() *drinksv1beta1.Drink { return &drinksv1beta1.Drink{} }, conversion.V1ToV1beta1, conversion.V1beta1ToV1),
	Spoke(drinksv1alpha1.GroupVersion.Version, drinksv1alpha1.AddToScheme,
		func() *drinksv1alpha1.Drink { return &drinksv1alpha1.Drink{} }, conversion.V1ToV1alpha1, conversion.V1alpha1ToV1),
}

// Spoke is the GoVersion of the spoke name, whose types addToScheme
// registers, whose empty object newT makes, and whose typed conversion
// functions are fromHub and toHub.
func Spoke[T client.Object](name string, addToScheme func(*runtime.Scheme) error, newT func() T,
	fromHub func(context.Context, *drinksv1.Drink, T) error, toHub func(context.Context, T, *drinksv1.Drink) error,
) GoVersion {
	return GoVersion{
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

// AddToScheme adds every Drink version of Default to s.
func AddToScheme(s *runtime.Scheme) error { return Default.AddToScheme(s) }

// NewConverter is Default's converter for the conversion webhook.
func NewConverter() func(*runtime.Scheme) (crconversion.Converter, error) {
	return Default.NewConverter()
}

// AddToScheme adds every version of vs to s.
func (vs Versions) AddToScheme(s *runtime.Scheme) error {
	for _, v := range vs {
		if err := v.addToScheme(s); err != nil {
			return err
		}
	}
	return nil
}

// NewConverter returns the constructor of the Drink converter that the
// webhook builder registers on the /convert endpoint: every spoke of vs
// through the hub.
func (vs Versions) NewConverter() func(*runtime.Scheme) (crconversion.Converter, error) {
	var spokes []crconversion.SpokeConverter[*drinksv1.Drink]
	for _, v := range vs {
		if v.spoke != nil {
			spokes = append(spokes, v.spoke)
		}
	}
	return crconversion.NewHubSpokeConverter(&drinksv1.Drink{}, spokes...)
}

// New returns an empty Drink of version (for example "v1beta1"); an error
// naming the versions there are when vs has none of that name.
func (vs Versions) New(version string) (client.Object, error) {
	v, err := vs.lookup(version)
	if err != nil {
		return nil, err
	}
	return v.newObject(), nil
}

// Convert returns obj, a typed Drink of any version of vs, converted to
// version to through the hub, with its apiVersion and kind set. Nothing is lost: a
// spoke keeps what it cannot hold in the conversion-data annotation.
func (vs Versions) Convert(ctx context.Context, obj runtime.Object, to string) (client.Object, error) {
	target, err := vs.lookup(to)
	if err != nil {
		return nil, err
	}
	hub := &drinksv1.Drink{}
	converted := false
	for _, v := range vs {
		ok, err := v.toHub(ctx, obj, hub)
		if err != nil {
			return nil, err
		}
		if converted = ok; ok {
			break
		}
	}
	if !converted {
		return nil, fmt.Errorf("%T is not a Drink of any version (%s)", obj, drinksversions.List(vs.Names()))
	}
	out := target.newObject()
	if err := target.fromHub(ctx, hub, out); err != nil {
		return nil, err
	}
	out.GetObjectKind().SetGroupVersionKind(drinksv1.GroupVersion.WithKind("Drink").GroupKind().WithVersion(to))
	return out, nil
}

// Names are the versions of vs, the hub first.
func (vs Versions) Names() []string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.name
	}
	return names
}

func (vs Versions) lookup(version string) (GoVersion, error) {
	for _, v := range vs {
		if v.name == version {
			return v, nil
		}
	}
	return GoVersion{}, fmt.Errorf("no Drink version %q: the versions are %s", version, drinksversions.List(vs.Names()))
}

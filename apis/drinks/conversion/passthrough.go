package conversion

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
)

// PassThrough moves a Drink that cannot be converted (a value of the wrong
// type, conversion data that does not decode) to desiredAPIVersion without
// interpreting it: apiVersion changes and spec fields take their names in
// that version; values, metadata and status stay as they are, the
// conversion-data annotation included. The API server can then validate the
// object and answer with an error that names the field (422), where a failed
// conversion would be a 500 that names nothing. An object that the
// converter can take never needs this.
func PassThrough(obj map[string]any, desiredAPIVersion string) error {
	return PassThroughIn(drinksversions.Drinks, obj, desiredAPIVersion)
}

// PassThroughIn is PassThrough with the versions and field names of table
// t.
func PassThroughIn(t drinksversions.Table, obj map[string]any, desiredAPIVersion string) error {
	from, err := drinkVersion(t, obj["apiVersion"])
	if err != nil {
		return err
	}
	to, err := drinkVersion(t, desiredAPIVersion)
	if err != nil {
		return err
	}
	if spec, ok := obj["spec"].(map[string]any); ok {
		if from.Name != to.Name {
			spec = foldCourse(spec, from.Course)
		}
		obj["spec"] = rename(rename(spec, from.Renames), invert(to.Renames))
	}
	obj["apiVersion"] = desiredAPIVersion
	return nil
}

// drinkVersion returns the version of a Drink apiVersion, or an error when
// it names no version that t serves.
func drinkVersion(t drinksversions.Table, apiVersion any) (drinksversions.Version, error) {
	s, _ := apiVersion.(string)
	gv, err := schema.ParseGroupVersion(s)
	if err != nil {
		return drinksversions.Version{}, err
	}
	v, ok := t.Lookup(gv.Version)
	if gv.Group != drinksv1.GroupVersion.Group || !ok || !v.Served {
		return drinksversions.Version{}, fmt.Errorf("%q is not a Drink API version", s)
	}
	return v, nil
}

// rename returns spec with its keys renamed by names; other keys are kept.
func rename(spec map[string]any, names map[string]string) map[string]any {
	out := make(map[string]any, len(spec))
	for k, v := range spec {
		if n, ok := names[k]; ok {
			k = n
		}
		out[k] = v
	}
	return out
}

// foldCourse returns spec with each course field (course maps it to the
// field it stands for) in place of that field when the field is absent,
// and left out when it is present: a version without course fields has no
// place for them, and its own fields may carry the same names.
func foldCourse(spec map[string]any, course map[string]string) map[string]any {
	if len(course) == 0 {
		return spec
	}
	out := make(map[string]any, len(spec))
	for k, v := range spec {
		if _, ok := course[k]; !ok {
			out[k] = v
		}
	}
	for c, f := range course {
		if v, ok := spec[c]; ok {
			if _, taken := spec[f]; !taken {
				out[f] = v
			}
		}
	}
	return out
}

func invert(names map[string]string) map[string]string {
	out := make(map[string]string, len(names))
	for k, v := range names {
		out[v] = k
	}
	return out
}

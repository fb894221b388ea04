package conversion

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
	drinksv1beta1 "github.com/example/myoperator/apis/drinks/v1beta1"
)

// lostFields is what a spoke cannot hold, kept in ConversionDataAnnotation.
// Each spoke stores only the fields it lacks, so the annotation of an object
// that needs none is absent.
type lostFields struct {
	Size       drinksv1.Size `json:"size,omitempty"`
	SugarCubes int32         `json:"sugarCubes,omitempty"`
	Extras     []string      `json:"extras,omitempty"`
	// Name and Drink are the hub's course fields (v1's name and drink, the
	// course's names of displayName and beverage); the spokes' fields of
	// the same names hold displayName and beverage.
	Name  string `json:"name,omitempty"`
	Drink string `json:"drink,omitempty"`
	// CourseOnly lists the course fields the hub held without the field
	// they stand for (a Drink the course's operator stored and no client
	// wrote since): the spoke's field of that name holds the course field's
	// value, and converts back to it alone.
	CourseOnly []string `json:"courseOnly,omitempty"`
	// Annotation is the hub's own value of ConversionDataAnnotation, if it
	// had one: a user may write that key in v1, and it must survive too.
	Annotation *string `json:"annotation,omitempty"`
}

func (l *lostFields) empty() bool {
	return l.Size == "" && l.SugarCubes == 0 && len(l.Extras) == 0 && l.Name == "" && l.Drink == "" &&
		len(l.CourseOnly) == 0 && l.Annotation == nil
}

// toSpoke returns the values of the spokes' name and drink for the hub
// spec s (displayName and beverage, else the course's fields standing
// alone) and records in lost what of the course's fields they do not say.
func toSpoke(s *drinksv1.DrinkSpec, lost *lostFields) (name, drink string) {
	if s.DisplayName == "" && s.Name != "" {
		lost.CourseOnly = append(lost.CourseOnly, "name")
	} else {
		lost.Name = s.Name
	}
	if s.Beverage == "" && s.Drink != "" {
		lost.CourseOnly = append(lost.CourseOnly, "drink")
	} else {
		lost.Drink = s.Drink
	}
	return s.DisplayNameOrName(), s.BeverageOrDrink()
}

// fromSpoke sets the hub's displayName, beverage and course fields from a
// spoke's name and drink and what toSpoke recorded.
func fromSpoke(dst *drinksv1.DrinkSpec, name, drink string, lost *lostFields) {
	dst.DisplayName, dst.Name = name, lost.Name
	if slices.Contains(lost.CourseOnly, "name") {
		dst.DisplayName, dst.Name = "", name
	}
	dst.Beverage, dst.Drink = drink, lost.Drink
	if slices.Contains(lost.CourseOnly, "drink") {
		dst.Beverage, dst.Drink = "", drink
	}
}

// store writes the lost fields into the spoke's metadata, or removes the
// annotation when nothing is lost.
func store(meta *metav1.ObjectMeta, lost *lostFields) error {
	if lost.empty() {
		delete(meta.Annotations, drinksv1.ConversionDataAnnotation)
		if len(meta.Annotations) == 0 {
			meta.Annotations = nil
		}
		return nil
	}
	data, err := json.Marshal(lost)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", drinksv1.ConversionDataAnnotation, err)
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[drinksv1.ConversionDataAnnotation] = string(data)
	return nil
}

// restore reads the lost fields from the hub's metadata (copied from the
// spoke) and removes the annotation, putting back the hub's own value of it
// if it had one.
func restore(meta *metav1.ObjectMeta) (*lostFields, error) {
	lost := &lostFields{}
	data, ok := meta.Annotations[drinksv1.ConversionDataAnnotation]
	if !ok {
		return lost, nil
	}
	if err := json.Unmarshal([]byte(data), lost); err != nil {
		return nil, fmt.Errorf("metadata.annotations[%s]: cannot decode the fields kept by conversion: %w",
			drinksv1.ConversionDataAnnotation, err)
	}
	if lost.Annotation != nil {
		meta.Annotations[drinksv1.ConversionDataAnnotation] = *lost.Annotation
	} else {
		delete(meta.Annotations, drinksv1.ConversionDataAnnotation)
		if len(meta.Annotations) == 0 {
			meta.Annotations = nil
		}
	}
	return lost, nil
}

// CheckData returns why value, as a ConversionDataAnnotation, cannot be
// decoded, or nil when it can.
func CheckData(value string) error {
	return json.Unmarshal([]byte(value), &lostFields{})
}

// hubAnnotation returns the hub's own value of ConversionDataAnnotation.
func hubAnnotation(meta *metav1.ObjectMeta) *string {
	if v, ok := meta.Annotations[drinksv1.ConversionDataAnnotation]; ok {
		return &v
	}
	return nil
}

// V1alpha1ToV1 converts a v1alpha1 Drink to the hub.
func V1alpha1ToV1(_ context.Context, src *drinksv1alpha1.Drink, dst *drinksv1.Drink) error {
	src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
	lost, err := restore(&dst.ObjectMeta)
	if err != nil {
		return err
	}
	dst.Spec = drinksv1.DrinkSpec{
		Size:       lost.Size,
		SugarCubes: lost.SugarCubes,
		Extras:     lost.Extras,
	}
	fromSpoke(&dst.Spec, src.Spec.Name, src.Spec.Drink, lost)
	dst.Status = drinksv1.DrinkStatus(*src.Status.DeepCopy())
	return nil
}

// V1ToV1alpha1 converts the hub to a v1alpha1 Drink, keeping size,
// sugarCubes, extras and the course's fields in the conversion-data
// annotation.
func V1ToV1alpha1(_ context.Context, src *drinksv1.Drink, dst *drinksv1alpha1.Drink) error {
	src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
	lost := &lostFields{
		Size:       src.Spec.Size,
		SugarCubes: src.Spec.SugarCubes,
		Extras:     src.Spec.Extras,
		Annotation: hubAnnotation(&src.ObjectMeta),
	}
	name, drink := toSpoke(&src.Spec, lost)
	dst.Spec = drinksv1alpha1.DrinkSpec{Name: name, Drink: drink}
	dst.Status = drinksv1alpha1.DrinkStatus(*src.Status.DeepCopy())
	return store(&dst.ObjectMeta, lost)
}

// V1beta1ToV1 converts a v1beta1 Drink to the hub.
func V1beta1ToV1(_ context.Context, src *drinksv1beta1.Drink, dst *drinksv1.Drink) error {
	src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
	lost, err := restore(&dst.ObjectMeta)
	if err != nil {
		return err
	}
	dst.Spec = drinksv1.DrinkSpec{
		Size:       drinksv1.Size(src.Spec.Size),
		SugarCubes: src.Spec.Sugar,
		Extras:     lost.Extras,
	}
	fromSpoke(&dst.Spec, src.Spec.Name, src.Spec.Drink, lost)
	dst.Status = drinksv1.DrinkStatus(*src.Status.DeepCopy())
	return nil
}

// V1ToV1beta1 converts the hub to a v1beta1 Drink, keeping extras and the
// course's fields in the conversion-data annotation.
func V1ToV1beta1(_ context.Context, src *drinksv1.Drink, dst *drinksv1beta1.Drink) error {
	src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
	lost := &lostFields{
		Extras:     src.Spec.Extras,
		Annotation: hubAnnotation(&src.ObjectMeta),
	}
	name, drink := toSpoke(&src.Spec, lost)
	dst.Spec = drinksv1beta1.DrinkSpec{
		Name:  name,
		Drink: drink,
		Size:  drinksv1beta1.Size(src.Spec.Size),
		Sugar: src.Spec.SugarCubes,
	}
	dst.Status = drinksv1beta1.DrinkStatus(*src.Status.DeepCopy())
	return store(&dst.ObjectMeta, lost)
}

package validation

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/example/myoperator/apis/drinks/conversion"
	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
	"github.com/example/myoperator/internal/crdvalidation"
	"github.com/example/myoperator/internal/pause"
)

// ValidateHub checks a Drink written through any served version in its hub
// (v1) form, the form it is stored in, against v's table: every OpenAPI and
// CEL rule of the generated v1 CRD (the API server checks only the version a
// client writes in) and the rules the CRD cannot say.
//
// old is the stored Drink on update, nil on create. As with the API server's
// CRD validation ratcheting, a rule broken only by values that did not change
// is not an error: a Drink stored before a rule existed stays writable (a
// label edit, the storage migration).
//
// requestVersion is the version the client wrote in. A value of a field that
// version cannot hold came from the conversion-data annotation, and its error
// says so.
func (v DrinkValidator) ValidateHub(ctx context.Context, old, d *drinksv1.Drink, requestVersion string) field.ErrorList {
	crd, err := crdvalidation.DrinkHub()
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	var oldObj map[string]any
	if old != nil {
		if oldObj, err = runtime.DefaultUnstructuredConverter.ToUnstructured(old); err != nil {
			return field.ErrorList{field.InternalError(nil, err)}
		}
	}
	errs := crd.Validate(ctx, obj, oldObj)
	errs = append(errs, v.validateRules(old, d)...)
	return v.explainConversionData(errs, old, d, requestVersion)
}

// drinkRule is a Drink rule that the CRD cannot say.
type drinkRule struct {
	// reads returns what the rule depends on: an update that leaves it as it
	// was is not checked again.
	reads func(*drinksv1.Drink) any
	check func(*drinksv1.Drink) field.ErrorList
}

// rules are the Drink rules the CRD cannot say; some read v's table.
func (v DrinkValidator) rules() []drinkRule {
	return []drinkRule{
		{reads: func(d *drinksv1.Drink) any { return d.Name }, check: checkNameIsLabel},
		{reads: func(d *drinksv1.Drink) any { return []any{d.Spec.Size, d.Spec.Extras} }, check: checkSmallExtras},
		{reads: annotation(drinksv1.AuthoredVersionAnnotation), check: v.checkAuthoredVersion},
		{reads: annotation(drinksv1.ConversionDataAnnotation), check: v.checkNoConversionData},
		{reads: annotation(pause.Annotation), check: func(d *drinksv1.Drink) field.ErrorList { return pause.Validate(d.Annotations) }},
	}
}

// validateRules runs the rules on d; on update (old set), only those whose
// input changed.
func (v DrinkValidator) validateRules(old, d *drinksv1.Drink) field.ErrorList {
	var errs field.ErrorList
	for _, r := range v.rules() {
		if old != nil && apiequality.Semantic.DeepEqual(r.reads(old), r.reads(d)) {
			continue
		}
		errs = append(errs, r.check(d)...)
	}
	return errs
}

func annotation(key string) func(*drinksv1.Drink) any {
	return func(d *drinksv1.Drink) any {
		if v, ok := d.Annotations[key]; ok {
			return &v
		}
		return nil
	}
}

// checkNoConversionData: the conversion-data annotation belongs to the
// operator. Conversion to v1 consumes it, so a v1 form that still has it
// got it from a client: written through v1, or through an older version with
// a value that does not decode. Stored, it would be taken for data kept by
// conversion the next time the Drink is read in an older version.
func (v DrinkValidator) checkNoConversionData(d *drinksv1.Drink) field.ErrorList {
	value, ok := d.Annotations[drinksv1.ConversionDataAnnotation]
	if !ok {
		return nil
	}
	t := v.table()
	hub := t.Hub().Name
	detail := fmt.Sprintf("belongs to the operator: conversion writes it on %s Drinks to keep the %s fields they lack; "+
		"remove it, and set those fields through %s/%s", drinksversions.List(t.Spokes()), hub, drinksv1.GroupVersion.Group, hub)
	if err := conversion.CheckData(value); err != nil {
		detail += "; this value does not even decode: " + err.Error()
	}
	return field.ErrorList{field.Forbidden(field.NewPath("metadata", "annotations").Key(drinksv1.ConversionDataAnnotation), detail)}
}

// explainConversionData adds to each error on a field that requestVersion
// cannot hold that its value came from the conversion-data annotation; on
// update only when the value is new (unchanged values come from the stored
// Drink).
func (v DrinkValidator) explainConversionData(errs field.ErrorList, old, d *drinksv1.Drink, requestVersion string) field.ErrorList {
	fields := v.table().HubOnly(requestVersion)
	if len(fields) == 0 {
		return errs
	}
	for _, e := range errs {
		f, ok := specField(e.Field, fields)
		if !ok || (old != nil && conversion.EqualSpecFields(&old.Spec, &d.Spec, []string{f})) {
			continue
		}
		// "no field for v1's": a spoke may have a field of the same name
		// that stands for another (v1alpha1's name is v1's displayName,
		// not v1's course field name).
		note := fmt.Sprintf("this value came from the metadata.annotations[%s] annotation, since %s has no field for %s's spec.%s",
			drinksv1.ConversionDataAnnotation, requestVersion, v.table().Hub().Name, f)
		if e.Detail == "" {
			e.Detail = note
		} else {
			e.Detail += "; " + note
		}
	}
	return errs
}

// specField returns which of fields the error path is in.
func specField(path string, fields []string) (string, bool) {
	i := slices.IndexFunc(fields, func(f string) bool {
		p := "spec." + f
		return path == p || strings.HasPrefix(path, p+"[") || strings.HasPrefix(path, p+".")
	})
	if i < 0 {
		return "", false
	}
	return fields[i], true
}

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
	"github.com/example/myoperator/internal/crdvalidation"
)

// ValidateDrinkHub checks a Drink written through any served version in its
// hub (v1) form, the form it is stored in: every OpenAPI and CEL rule of the
// generated v1 CRD (the API server checks only the version a client writes
// in) and the rules the CRD cannot say (ValidateDrink).
//
// old is the stored Drink on update, nil on create. As with the API server's
// CRD validation ratcheting, a rule broken only by values that did not change
// is not an error: a Drink stored before a rule existed stays writable (a
// label edit, the storage migration).
//
// requestVersion is the version the client wrote in. A value of a field that
// version cannot hold came from the conversion-data annotation, and its error
// says so.
func ValidateDrinkHub(ctx context.Context, old, d *drinksv1.Drink, requestVersion string) field.ErrorList {
	v, err := crdvalidation.DrinkHub()
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
	errs := v.Validate(ctx, obj, oldObj)
	errs = append(errs, validateDrinkRules(old, d)...)
	return explainConversionData(errs, old, d, requestVersion)
}

// drinkRule is a Drink rule that the CRD cannot say.
type drinkRule struct {
	// reads returns what the rule depends on: an update that leaves it as it
	// was is not checked again.
	reads func(*drinksv1.Drink) any
	check func(*drinksv1.Drink) field.ErrorList
}

var drinkRules = []drinkRule{
	{reads: func(d *drinksv1.Drink) any { return d.Name }, check: checkNameIsLabel},
	{reads: func(d *drinksv1.Drink) any { return []any{d.Spec.Size, d.Spec.Extras} }, check: checkSmallExtras},
	{reads: annotation(drinksv1.AuthoredVersionAnnotation), check: checkAuthoredVersion},
	{reads: annotation(drinksv1.ConversionDataAnnotation), check: checkNoConversionData},
}

// validateDrinkRules runs drinkRules on d; on update (old set), only those
// whose input changed.
func validateDrinkRules(old, d *drinksv1.Drink) field.ErrorList {
	var errs field.ErrorList
	for _, r := range drinkRules {
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
func checkNoConversionData(d *drinksv1.Drink) field.ErrorList {
	v, ok := d.Annotations[drinksv1.ConversionDataAnnotation]
	if !ok {
		return nil
	}
	detail := "belongs to the operator: conversion writes it on v1alpha1 and v1beta1 Drinks to keep the v1 fields they lack; " +
		"remove it, and set those fields through example.com/v1"
	if err := conversion.CheckData(v); err != nil {
		detail += "; this value does not even decode: " + err.Error()
	}
	return field.ErrorList{field.Forbidden(field.NewPath("metadata", "annotations").Key(drinksv1.ConversionDataAnnotation), detail)}
}

// explainConversionData adds to each error on a field that requestVersion
// cannot hold that its value came from the conversion-data annotation; on
// update only when the value is new (unchanged values come from the stored
// Drink).
func explainConversionData(errs field.ErrorList, old, d *drinksv1.Drink, requestVersion string) field.ErrorList {
	fields := conversion.HubOnlyFields(requestVersion)
	if len(fields) == 0 {
		return errs
	}
	for _, e := range errs {
		f, ok := specField(e.Field, fields)
		if !ok || (old != nil && sameSpecField(old, d, f)) {
			continue
		}
		note := fmt.Sprintf("this value came from the metadata.annotations[%s] annotation, since %s has no spec.%s",
			drinksv1.ConversionDataAnnotation, requestVersion, f)
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

func sameSpecField(old, d *drinksv1.Drink, jsonName string) bool {
	switch jsonName {
	case "size":
		return old.Spec.Size == d.Spec.Size
	case "sugarCubes":
		return old.Spec.SugarCubes == d.Spec.SugarCubes
	case "extras":
		return slices.Equal(old.Spec.Extras, d.Spec.Extras)
	}
	return false
}

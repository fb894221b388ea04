package conversion

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
)

// hubNames maps, per spoke version, each spec field of the spoke to its
// name in the hub. Fields absent here have the same name in both.
var hubNames = map[string]map[string]string{
	"v1alpha1": {"name": "displayName", "drink": "beverage"},
	"v1beta1":  {"name": "displayName", "drink": "beverage", "sugar": "sugarCubes"},
}

// hubOnly lists, per spoke version, the hub's spec fields that the spoke has
// no field for: conversion keeps them in ConversionDataAnnotation.
var hubOnly = map[string][]string{
	"v1alpha1": {"size", "sugarCubes", "extras"},
	"v1beta1":  {"extras"},
}

// HubOnlyFields returns the v1 spec fields (JSON names) that version cannot
// hold, whose values travel in ConversionDataAnnotation; none for v1.
func HubOnlyFields(version string) []string { return slices.Clone(hubOnly[version]) }

// PassThrough moves a Drink that cannot be converted (a value of the wrong
// type, conversion data that does not decode) to desiredAPIVersion without
// interpreting it: apiVersion changes and spec fields take their names in
// that version; values, metadata and status stay as they are, the
// conversion-data annotation included. The API server can then validate the
// object and answer with an error that names the field (422), where a failed
// conversion would be a 500 that names nothing. An object that the
// converter can take never needs this.
func PassThrough(obj map[string]any, desiredAPIVersion string) error {
	from, err := drinkVersion(obj["apiVersion"])
	if err != nil {
		return err
	}
	to, err := drinkVersion(desiredAPIVersion)
	if err != nil {
		return err
	}
	if spec, ok := obj["spec"].(map[string]any); ok {
		obj["spec"] = rename(rename(spec, hubNames[from]), invert(hubNames[to]))
	}
	obj["apiVersion"] = desiredAPIVersion
	return nil
}

// drinkVersion returns the version of a Drink apiVersion, or an error when
// it names no served Drink version.
func drinkVersion(apiVersion any) (string, error) {
	s, _ := apiVersion.(string)
	gv, err := schema.ParseGroupVersion(s)
	if err != nil {
		return "", err
	}
	if _, spoke := hubNames[gv.Version]; gv.Group != drinksv1.GroupVersion.Group ||
		(!spoke && gv.Version != drinksv1.GroupVersion.Version) {
		return "", fmt.Errorf("%q is not a Drink API version", s)
	}
	return gv.Version, nil
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

func invert(names map[string]string) map[string]string {
	out := make(map[string]string, len(names))
	for k, v := range names {
		out[v] = k
	}
	return out
}

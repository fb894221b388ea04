package crdvalidation

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"sigs.k8s.io/yaml"
)

// Validator checks objects of one version of a CRD as the API server does
// for that version: OpenAPI schema, list types and CEL rules, ratcheting
// unchanged values on update (CRDValidationRatcheting).
type Validator struct {
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// New builds the validator of version of the CRD in crdYAML. It fails when
// the CRD does not decode or has no schema for version: the CRD is generated,
// so that is a build error, not a user's.
func New(crdYAML []byte, version string) (*Validator, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(crdYAML, crd); err != nil {
		return nil, fmt.Errorf("decoding the CRD: %w", err)
	}
	props, err := versionSchema(crd, version)
	if err != nil {
		return nil, err
	}
	structural, err := structuralschema.NewStructural(props)
	if err != nil {
		return nil, fmt.Errorf("CRD %s version %s: schema is not structural: %w", crd.Name, version, err)
	}
	schema, _, err := apiservervalidation.NewSchemaValidator(props)
	if err != nil {
		return nil, fmt.Errorf("CRD %s version %s: %w", crd.Name, version, err)
	}
	return &Validator{
		structural: structural,
		schema:     schema,
		// Compiled once here, as the API server does per CRD version.
		cel: cel.NewValidator(structural, true, celconfig.PerCallLimit),
	}, nil
}

// versionSchema returns the internal form of version's OpenAPI schema, the
// form the validation packages take.
func versionSchema(crd *apiextensionsv1.CustomResourceDefinition, version string) (*apiextensions.JSONSchemaProps, error) {
	for _, v := range crd.Spec.Versions {
		if v.Name != version {
			continue
		}
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return nil, fmt.Errorf("CRD %s version %s has no schema", crd.Name, version)
		}
		internal := &apiextensions.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
			return nil, fmt.Errorf("CRD %s version %s: %w", crd.Name, version, err)
		}
		return internal, nil
	}
	return nil, fmt.Errorf("CRD %s has no version %s", crd.Name, version)
}

// Validate checks obj, a JSON-like object (map[string]any, as decoded into
// an Unstructured). old is the stored object on update, nil on create: a
// value equal to its old value is not checked again, so objects that were
// legal before a rule existed stay writable.
func (v *Validator) Validate(ctx context.Context, obj, old map[string]any) field.ErrorList {
	var errs field.ErrorList
	var schemaOpts []apiservervalidation.ValidationOption
	var celOpts []cel.Option
	if old == nil {
		errs = append(errs, apiservervalidation.ValidateCustomResource(nil, obj, v.schema)...)
		errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, v.structural, obj)...)
	} else {
		correlated := common.NewCorrelatedObject(obj, old, &model.Structural{Structural: v.structural})
		schemaOpts = append(schemaOpts, apiservervalidation.WithRatcheting(correlated))
		celOpts = append(celOpts, cel.WithRatcheting(correlated))
		errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(nil, obj, old, v.schema, schemaOpts...)...)
		errs = append(errs, changedLists(structurallisttype.ValidateListSetsAndMaps(nil, v.structural, obj), obj, old)...)
	}
	// CEL rules assume the types and bounds the schema promises; the API
	// server does not run them on an object that breaks those either.
	if blocking(errs) {
		return errs
	}
	var oldObj any
	if old != nil {
		oldObj = old
	}
	celErrs, _ := v.cel.Validate(ctx, nil, v.structural, obj, oldObj, celconfig.RuntimeCELCostBudget, celOpts...)
	return append(errs, celErrs...)
}

// changedLists keeps the list-type errors (a duplicate in a set, say) of
// lists that differ from their old value. The API server skips these checks
// on update when the old object broke them anywhere; here a changed list is
// checked even then, and an unchanged one never.
func changedLists(errs field.ErrorList, obj, old map[string]any) field.ErrorList {
	var out field.ErrorList
	for _, e := range errs {
		list := listPath(e.Field)
		newList, found := valueAt(obj, list)
		oldList, oldFound := valueAt(old, list)
		if !found || !oldFound || !apiequality.Semantic.DeepEqual(newList, oldList) {
			out = append(out, e)
		}
	}
	return out
}

// listPath returns the path of the list an item's error path is in:
// "spec.extras" for "spec.extras[1]".
func listPath(itemPath string) string {
	if i := strings.LastIndex(itemPath, "["); i > 0 {
		return itemPath[:i]
	}
	return itemPath
}

// valueAt returns the value at a field path such as "spec.items[2].name".
func valueAt(obj any, path string) (any, bool) {
	cur := obj
	for _, part := range strings.Split(path, ".") {
		name, indexes, _ := strings.Cut(part, "[")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[name]; !ok {
			return nil, false
		}
		for idx := range strings.SplitSeq(strings.TrimSuffix(indexes, "]"), "][") {
			if idx == "" {
				continue
			}
			n, err := strconv.Atoi(idx)
			l, ok := cur.([]any)
			if err != nil || !ok || n < 0 || n >= len(l) {
				return nil, false
			}
			cur = l[n]
		}
	}
	return cur, true
}

// blocking reports whether errs hold an error after which the CEL rules
// cannot be trusted to evaluate.
func blocking(errs field.ErrorList) bool {
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong,
			field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true
		}
	}
	return false
}

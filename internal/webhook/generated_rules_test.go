package webhook_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"sigs.k8s.io/yaml"

	"github.com/example/myoperator/apis/drinks/conversion"
	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
)

// ruleCase is a v1 spec that breaks one rule of the v1 schema.
type ruleCase struct {
	rule string
	// top is the spec field (v1 name) the error is on, and path the rest
	// of the error's path below it ("", "[1]").
	top, path string
	spec      map[string]any
}

// celViolations says, for each CEL rule of the v1 spec, how to break it:
// on a property, the value that breaks it; on spec, a change to the spec and
// the field the error names. A rule missing here fails the test, so that a
// new rule cannot go untested.
var (
	celValueViolations = map[string]any{
		`!self.matches(r'^[\p{Z}\p{Cc}\p{Cf}]*$')`: "\u200b\u2060",
	}
	celSpecViolations = map[string]func(spec map[string]any) string{
		`!has(self.extras) || !self.extras.exists(e, e == self.beverage)`: func(spec map[string]any) string {
			spec["extras"] = []any{spec["beverage"]}
			return "extras"
		},
		`has(self.displayName) || has(self.name)`: func(spec map[string]any) string {
			delete(spec, "displayName")
			return "displayName"
		},
		`has(self.beverage) || has(self.drink)`: func(spec map[string]any) string {
			delete(spec, "beverage")
			return "beverage"
		},
		`!has(self.name) || !has(self.displayName) || self.name == self.displayName`: func(spec map[string]any) string {
			spec["name"] = "not " + spec["displayName"].(string)
			return "name"
		},
		`!has(self.drink) || !has(self.beverage) || self.drink == self.beverage`: func(spec map[string]any) string {
			spec["drink"] = "not " + spec["beverage"].(string)
			return "drink"
		},
	}
)

// validSpec is a v1 spec that breaks no rule; validItem is an extra that
// breaks no rule.
func validSpec() map[string]any { return map[string]any{"displayName": "x", "beverage": "tea"} }

func validItem(i int) string { return fmt.Sprintf("x%d", i) }

// TestV1RulesThroughOlderVersions is generated from the CRD the webhook
// embeds (which TestEmbeddedCRDIsGenerated compares with config/crd): for
// every rule of the v1 spec schema (OpenAPI keywords, list types, CEL rules)
// it builds a v1 spec that breaks that rule, writes it through v1alpha1 and
// v1beta1 (fields the version lacks in the conversion-data annotation, as
// conversion carries them) and expects a 422 that names the field, with
// nothing stored.
func TestV1RulesThroughOlderVersions(t *testing.T) {
	spec := hubSchema(t).Properties["spec"]
	cases := specRuleCases(t, &spec)
	if len(cases) < 10 {
		t.Fatalf("only %d rules found in the v1 spec schema", len(cases))
	}
	ns := namespace(t)
	for _, version := range []string{"v1alpha1", "v1beta1"} {
		for i, tc := range cases {
			t.Run(version+"/"+tc.rule, func(t *testing.T) {
				if v, ok := tc.spec[tc.top].(string); ok && v == "" && slices.Contains(drinksversions.Drinks.HubOnly(version), tc.top) {
					// The conversion data holds v1's string fields with
					// omitempty: an empty one there is no value at all.
					t.Skip("an empty string kept in the conversion data is an absent field: nothing to refuse")
				}
				obj, field, want := throughVersion(t, version, tc)
				u := drinkDoc(t, ns, version, fmt.Sprintf("gen-%s-%d", version, i), "{}")
				u.Object["spec"] = obj["spec"]
				if md, ok := obj["metadata"].(map[string]any); ok {
					u.SetAnnotations(map[string]string{drinksv1.ConversionDataAnnotation: md["annotations"].(map[string]string)[drinksv1.ConversionDataAnnotation]})
				}
				expectRejected(t, u, field, want)
			})
		}
	}
}

// throughVersion writes tc's v1 spec as version would carry it: fields under
// the version's names, the fields it lacks in the conversion-data
// annotation. It returns the object, the field path the error must name,
// and what else it must say.
func throughVersion(t *testing.T, version string, tc ruleCase) (map[string]any, string, []string) {
	t.Helper()
	// The fields the version lacks go to the annotation by their v1
	// names, before the rest takes the version's names (v1's course fields
	// name and drink share their names with the older versions' own).
	spec := maps.Clone(tc.spec)
	kept := map[string]any{}
	for _, f := range drinksversions.Drinks.HubOnly(version) {
		if val, ok := spec[f]; ok {
			kept[f] = val
			delete(spec, f)
		}
	}
	obj := map[string]any{"apiVersion": "example.com/v1", "spec": spec}
	if err := conversion.PassThrough(obj, "example.com/"+version); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(kept)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) > 0 {
		obj["metadata"] = map[string]any{"annotations": map[string]string{drinksv1.ConversionDataAnnotation: string(data)}}
	}
	if slices.Contains(drinksversions.Drinks.HubOnly(version), tc.top) {
		if err := json.Unmarshal(data, &drinksv1.DrinkSpec{}); err != nil {
			// A value the v1 type cannot hold cannot be conversion data:
			// the annotation is rejected, naming the field it holds.
			return obj, "metadata.annotations[" + drinksv1.ConversionDataAnnotation + "]", []string{tc.top}
		}
		return obj, "spec." + tc.top + tc.path, []string{fromAnnotation}
	}
	// The version holds the field: its own schema names it by its own name.
	named := map[string]any{"apiVersion": "example.com/v1", "spec": map[string]any{tc.top: true}}
	if err := conversion.PassThrough(named, "example.com/"+version); err != nil {
		t.Fatal(err)
	}
	for name := range named["spec"].(map[string]any) {
		return obj, "spec." + name + tc.path, nil
	}
	panic("unreachable")
}

// specRuleCases lists a breaking spec for every rule of the spec schema s,
// and fails the test for a rule it does not know how to break.
func specRuleCases(t *testing.T, s *structuralschema.Structural) []ruleCase {
	t.Helper()
	var cases []ruleCase
	add := func(rule, top, path string, change func(map[string]any)) {
		spec := validSpec()
		change(spec)
		cases = append(cases, ruleCase{rule: rule, top: top, path: path, spec: spec})
	}
	if s.ValueValidation != nil {
		for _, r := range s.ValueValidation.Required {
			add("spec required "+r, r, "", func(spec map[string]any) { delete(spec, r) })
		}
	}
	for _, r := range s.XValidations {
		breakIt, ok := celSpecViolations[r.Rule]
		if !ok {
			t.Errorf("CEL rule %q on spec: no way to break it in celSpecViolations; add one", r.Rule)
			continue
		}
		spec := validSpec()
		top := breakIt(spec)
		cases = append(cases, ruleCase{rule: "spec CEL " + r.Message, top: top, spec: spec})
	}
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		prop := s.Properties[name]
		for _, v := range violations(t, "spec."+name, &prop) {
			add(fmt.Sprintf("spec.%s %s", name, v.rule), name, v.path, func(spec map[string]any) { spec[name] = v.value })
		}
	}
	return cases
}

type violation struct {
	rule, path string
	value      any
}

// violations returns a value breaking each rule of the property schema s.
func violations(t *testing.T, where string, s *structuralschema.Structural) []violation {
	t.Helper()
	var out []violation
	for _, r := range s.XValidations {
		val, ok := celValueViolations[r.Rule]
		if !ok {
			t.Errorf("CEL rule %q on %s: no way to break it in celValueViolations; add one", r.Rule, where)
			continue
		}
		out = append(out, violation{rule: "CEL " + r.Message, value: val})
	}
	if s.XListType != nil && *s.XListType == "set" {
		out = append(out, violation{rule: "listType set", path: "[1]", value: []any{validItem(0), validItem(0)}})
	}
	if s.Items != nil {
		for _, v := range violations(t, where+"[*]", s.Items) {
			out = append(out, violation{rule: "items " + v.rule, path: "[0]" + v.path, value: []any{v.value}})
		}
	}
	vv := s.ValueValidation
	if vv == nil {
		return out
	}
	if vv.MaxLength != nil {
		out = append(out, violation{rule: fmt.Sprintf("maxLength %d", *vv.MaxLength), value: strings.Repeat("a", int(*vv.MaxLength)+1)})
	}
	if vv.MinLength != nil && *vv.MinLength > 0 {
		out = append(out, violation{rule: fmt.Sprintf("minLength %d", *vv.MinLength), value: strings.Repeat("a", int(*vv.MinLength)-1)})
	}
	if vv.Minimum != nil {
		out = append(out, violation{rule: fmt.Sprintf("minimum %v", *vv.Minimum), value: int64(*vv.Minimum) - 1})
	}
	if vv.Maximum != nil {
		out = append(out, violation{rule: fmt.Sprintf("maximum %v", *vv.Maximum), value: int64(*vv.Maximum) + 1})
	}
	if vv.MaxItems != nil {
		items := make([]any, *vv.MaxItems+1)
		for i := range items {
			items[i] = validItem(i)
		}
		out = append(out, violation{rule: fmt.Sprintf("maxItems %d", *vv.MaxItems), value: items})
	}
	if len(vv.Enum) > 0 {
		out = append(out, violation{rule: "enum", value: "Not" + fmt.Sprint(vv.Enum)})
	}
	if vv.Pattern != "" {
		out = append(out, violation{rule: "pattern", value: breakPattern(t, where, vv.Pattern)})
	}
	switch vv.Format {
	case "":
	case "int32":
		out = append(out, violation{rule: "format int32", value: int64(1) << 31})
	default:
		t.Errorf("%s: format %q has no generated violation; add one", where, vv.Format)
	}
	if vv.ExclusiveMaximum || vv.ExclusiveMinimum || vv.MinItems != nil || vv.UniqueItems || vv.MultipleOf != nil ||
		vv.MaxProperties != nil || vv.MinProperties != nil || len(vv.Required) > 0 ||
		len(vv.AllOf)+len(vv.OneOf)+len(vv.AnyOf) > 0 || vv.Not != nil {
		t.Errorf("%s: a rule of this schema has no generated violation; extend violations: %+v", where, vv)
	}
	return out
}

// breakPattern returns a string that the pattern rejects.
func breakPattern(t *testing.T, where, pattern string) string {
	t.Helper()
	re := regexp.MustCompile(pattern)
	for _, s := range []string{"Not OK", "-", "a_b", "UPPER", "", "ok"} {
		if !re.MatchString(s) {
			return s
		}
	}
	t.Errorf("%s: no candidate string breaks pattern %q; add one", where, pattern)
	return ""
}

// hubSchema is the structural schema of the hub version of the Drink CRD that
// the webhook embeds (internal/crdvalidation's copy of config/crd).
func hubSchema(t *testing.T) *structuralschema.Structural {
	t.Helper()
	raw, err := os.ReadFile("../crdvalidation/example.com_drinks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(raw, crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != drinksversions.Drinks.Hub().Name {
			continue
		}
		props := &apiextensions.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, props, nil); err != nil {
			t.Fatal(err)
		}
		s, err := structuralschema.NewStructural(props)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	t.Fatalf("the embedded CRD has no version %s", drinksversions.Drinks.Hub().Name)
	return nil
}

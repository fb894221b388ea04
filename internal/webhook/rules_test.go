package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
)

// rejection is a write that must be rejected: its field named, and words
// that say why.
type rejection struct {
	name string
	// doc is the object's YAML without apiVersion, kind and name.
	doc   string
	field string
	want  []string
}

// fromAnnotation is what an error on a value restored from the
// conversion-data annotation says.
const fromAnnotation = "came from the metadata.annotations[" + drinksv1.ConversionDataAnnotation + "] annotation"

// cd is a metadata block with the conversion-data annotation set to data.
func cd(data string) string {
	q, _ := yaml.Marshal(map[string]string{drinksv1.ConversionDataAnnotation: data})
	return "metadata:\n  annotations:\n    " + strings.ReplaceAll(strings.TrimSpace(string(q)), "\n", "\n    ") + "\n"
}

// TestEveryVersionKeepsEveryRule: through each version, writes that break a
// rule of another version (most of them the v1 rules that the API server
// checks only for v1 writes), forged or inconsistent conversion data and
// text that only looks like something are rejected with the field named,
// and nothing is stored.
func TestEveryVersionKeepsEveryRule(t *testing.T) {
	ns := namespace(t)
	const forbidden = "metadata.annotations[" + drinksv1.ConversionDataAnnotation + "]"
	tables := map[string][]rejection{
		"v1alpha1": {
			{"size from forged conversion data", cd(`{"size":"Huge"}`) + "spec: {name: x, drink: tea}",
				"spec.size", []string{`Unsupported value: "Huge"`, fromAnnotation}},
			{"negative sugar from conversion data", cd(`{"sugarCubes":-1}`) + "spec: {name: x, drink: tea}",
				"spec.sugarCubes", []string{"greater than or equal to 0", fromAnnotation}},
			{"too much sugar from conversion data", cd(`{"sugarCubes":11}`) + "spec: {name: x, drink: tea}",
				"spec.sugarCubes", []string{"less than or equal to 10", fromAnnotation}},
			{"duplicate extras from conversion data", cd(`{"extras":["ice","ice"]}`) + "spec: {name: x, drink: tea}",
				"spec.extras[1]", []string{"Duplicate value", fromAnnotation}},
			{"extra repeating the drink (inconsistent with the spec)", cd(`{"extras":["tea"]}`) + "spec: {name: x, drink: tea}",
				"spec.extras", []string{"extras must not repeat the beverage", fromAnnotation}},
			{"eleven extras from conversion data", cd(`{"extras":["a","b","c","d","e","f","g","h","i","j","k"]}`) + "spec: {name: x, drink: tea}",
				"spec.extras", []string{"at most 10", fromAnnotation}},
			{"extra that is no name", cd(`{"extras":["Not OK"]}`) + "spec: {name: x, drink: tea}",
				"spec.extras[0]", []string{"should match", fromAnnotation}},
			{"small drink with four extras from conversion data", cd(`{"size":"Small","extras":["a","b","c","d"]}`) + "spec: {name: x, drink: tea}",
				"spec.extras", []string{"a Small drink takes at most 3 extras", fromAnnotation}},
			{"conversion data that is not JSON", cd(`{not json`) + "spec: {name: x, drink: tea}",
				forbidden, []string{"belongs to the operator"}},
			{"conversion data of the wrong type", cd(`{"sugarCubes":"lots"}`) + "spec: {name: x, drink: tea}",
				forbidden, []string{"belongs to the operator"}},
			{"conversion data forging the v1 object's own annotation", cd(`{"annotation":"{\"size\":\"Huge\"}"}`) + "spec: {name: x, drink: tea}",
				forbidden, []string{"belongs to the operator"}},
			{"name of only a zero-width space", "spec: {name: \"\\u200b\", drink: tea}",
				"spec.name", []string{"name must not be blank"}},
			{"drink of only invisible characters", "spec: {name: x, drink: \"\\u00a0\\u200d\\ufeff\"}",
				"spec.drink", []string{"drink must not be blank"}},
		},
		"v1beta1": {
			{"extra repeating the drink (inconsistent with the spec)", cd(`{"extras":["tea"]}`) + "spec: {name: x, drink: tea}",
				"spec.extras", []string{"extras must not repeat the beverage", fromAnnotation}},
			{"duplicate extras from conversion data", cd(`{"extras":["ice","ice"]}`) + "spec: {name: x, drink: tea}",
				"spec.extras[1]", []string{"Duplicate value", fromAnnotation}},
			{"eleven extras from conversion data", cd(`{"extras":["a","b","c","d","e","f","g","h","i","j","k"]}`) + "spec: {name: x, drink: tea}",
				"spec.extras", []string{"at most 10", fromAnnotation}},
			{"extra that is too long", cd(`{"extras":["`+strings.Repeat("a", 33)+`"]}`) + "spec: {name: x, drink: tea}",
				"spec.extras[0]", []string{"may not be more than 32", fromAnnotation}},
			{"empty extra", cd(`{"extras":[""]}`) + "spec: {name: x, drink: tea}",
				"spec.extras[0]", []string{fromAnnotation}},
			{"small drink with four extras from conversion data (inconsistent with the spec)",
				cd(`{"extras":["a","b","c","d"]}`) + "spec: {name: x, drink: tea, size: Small}",
				"spec.extras", []string{"a Small drink takes at most 3 extras", fromAnnotation}},
			{"conversion data that is not JSON", cd(`not json`) + "spec: {name: x, drink: tea}",
				forbidden, []string{"belongs to the operator"}},
			{"conversion data of the wrong type", cd(`{"extras":"lemon"}`) + "spec: {name: x, drink: tea}",
				forbidden, []string{"belongs to the operator"}},
			{"conversion data forging the v1 object's own annotation", cd(`{"annotation":"x"}`) + "spec: {name: x, drink: tea}",
				forbidden, []string{"belongs to the operator"}},
			{"name of only a zero-width space", "spec: {name: \"\\u200b\\u200b\", drink: tea}",
				"spec.name", []string{"name must not be blank"}},
			{"drink of only a tab and a line separator", "spec: {name: x, drink: \"\\t\\u2028\"}",
				"spec.drink", []string{"drink must not be blank"}},
			{"too much sugar", "spec: {name: x, drink: tea, sugar: 11}",
				"spec.sugar", []string{"less than or equal to 10"}},
		},
		"v1": {
			{"forged conversion data", cd(`{"size":"Huge"}`) + "spec: {displayName: x, beverage: tea}",
				forbidden, []string{"belongs to the operator"}},
			{"conversion data that is not JSON", cd(`{not json`) + "spec: {displayName: x, beverage: tea}",
				forbidden, []string{"belongs to the operator"}},
			{"display name of only a zero-width space", "spec: {displayName: \"\\u200b\", beverage: tea}",
				"spec.displayName", []string{"displayName must not be blank"}},
			{"beverage of only a byte order mark and a space", "spec: {displayName: x, beverage: \"\\ufeff \"}",
				"spec.beverage", []string{"beverage must not be blank"}},
			{"extra repeating the beverage", "spec: {displayName: x, beverage: tea, extras: [tea]}",
				"spec.extras", []string{"extras must not repeat the beverage"}},
			{"duplicate extras", "spec: {displayName: x, beverage: tea, extras: [ice, ice]}",
				"spec.extras[1]", []string{"Duplicate value"}},
			{"small drink with four extras", "spec: {displayName: x, beverage: tea, size: Small, extras: [a, b, c, d]}",
				"spec.extras", []string{"a Small drink takes at most 3 extras"}},
			{"too much sugar", "spec: {displayName: x, beverage: tea, sugarCubes: 11}",
				"spec.sugarCubes", []string{"less than or equal to 10"}},
			{"unknown size", "spec: {displayName: x, beverage: tea, size: Huge}",
				"spec.size", []string{`Unsupported value: "Huge"`}},
			{"eleven extras", "spec: {displayName: x, beverage: tea, extras: [a, b, c, d, e, f, g, h, i, j, k]}",
				"spec.extras", []string{"at most 10"}},
		},
	}
	for version, table := range tables {
		if len(table) < 10 {
			t.Errorf("%s: %d rejections, want at least 10", version, len(table))
		}
		for i, tc := range table {
			t.Run(version+"/"+tc.name, func(t *testing.T) {
				obj := drinkDoc(t, ns, version, fmt.Sprintf("%s-%d", version, i), tc.doc)
				expectRejected(t, obj, tc.field, tc.want)
			})
		}
	}
}

// drinkDoc decodes doc as a Drink of version named name in ns.
func drinkDoc(t *testing.T, ns, version, name, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("bad test manifest: %v\n%s", err, doc)
	}
	if u.Object == nil {
		u.Object = map[string]any{}
	}
	u.SetAPIVersion("example.com/" + version)
	u.SetKind("Drink")
	u.SetNamespace(ns)
	u.SetName(strings.ToLower(name))
	return u
}

// expectRejected creates obj and expects a 422 Invalid whose message names
// field and contains want, with nothing stored.
func expectRejected(t *testing.T, obj *unstructured.Unstructured, field string, want []string) {
	t.Helper()
	ctx := context.Background()
	err := k8s.Create(ctx, obj)
	if err == nil {
		_ = k8s.Delete(ctx, obj)
		t.Fatalf("accepted, want rejected naming %s", field)
	}
	var status *apierrors.StatusError
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Code != http.StatusUnprocessableEntity {
		t.Fatalf("error is not a 422 Invalid: %v", err)
	}
	for _, w := range append([]string{field + ":"}, want...) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not contain %q:\n%v", w, err)
		}
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(obj.GroupVersionKind())
	if gerr := k8s.Get(ctx, client.ObjectKeyFromObject(obj), got); !apierrors.IsNotFound(gerr) {
		t.Errorf("rejected object is stored (get: %v)", gerr)
	}
}

// TestWrongTypesAre422: a value of the wrong type gets the same answer
// through every version: 422 Invalid naming the field, never a 500 from a
// conversion that could not decode it; on update too, and nothing changes.
func TestWrongTypesAre422(t *testing.T) {
	ns := namespace(t)
	tables := map[string][]rejection{
		"v1alpha1": {
			{"name a number", "spec: {name: 5, drink: tea}", "spec.name", []string{"must be of type string"}},
			{"drink a list", "spec: {name: x, drink: [tea]}", "spec.drink", []string{"must be of type string"}},
			{"spec a string", "spec: tea", "spec", []string{"must be of type object"}},
			{"name a boolean", "spec: {name: true, drink: tea}", "spec.name", []string{"must be of type string"}},
		},
		"v1beta1": {
			{"sugar a word", "spec: {name: x, drink: tea, sugar: lots}", "spec.sugar", []string{"must be of type integer"}},
			{"size a number", "spec: {name: x, drink: tea, size: 3}", "spec.size", []string{"must be of type string"}},
			{"name an object", "spec: {name: {first: x}, drink: tea}", "spec.name", []string{"must be of type string"}},
			{"sugar a fraction", "spec: {name: x, drink: tea, sugar: 1.5}", "spec.sugar", []string{"must be of type integer"}},
		},
		"v1": {
			{"sugar cubes a word", "spec: {displayName: x, beverage: tea, sugarCubes: lots}", "spec.sugarCubes", []string{"must be of type integer"}},
			{"extras a string", "spec: {displayName: x, beverage: tea, extras: lemon}", "spec.extras", []string{"must be of type array"}},
			{"display name a number", "spec: {displayName: 5, beverage: tea}", "spec.displayName", []string{"must be of type string"}},
			{"extra a number", "spec: {displayName: x, beverage: tea, extras: [1]}", "spec.extras[0]", []string{"must be of type string"}},
		},
	}
	for version, table := range tables {
		for i, tc := range table {
			t.Run(version+"/create/"+tc.name, func(t *testing.T) {
				obj := drinkDoc(t, ns, version, fmt.Sprintf("%s-wrong-%d", version, i), tc.doc)
				expectRejected(t, obj, tc.field, tc.want)
			})
		}
	}
	// Updates: a valid Drink, then a wrong type written through each version.
	mustCreateYAML(t, ns, "apiVersion: example.com/v1\nkind: Drink\nmetadata: {name: typed}\nspec: {displayName: x, beverage: tea, extras: [ice]}")
	for _, tc := range []struct{ version, field, value, want string }{
		{"v1alpha1", "drink", "[tea]", "must be of type string"},
		{"v1beta1", "sugar", "lots", "must be of type integer"},
		{"v1", "sugarCubes", "lots", "must be of type integer"},
	} {
		t.Run(tc.version+"/update/"+tc.field, func(t *testing.T) {
			ctx := context.Background()
			var value any
			if err := yaml.Unmarshal([]byte(tc.value), &value); err != nil {
				t.Fatal(err)
			}
			before := &unstructured.Unstructured{}
			before.SetAPIVersion("example.com/" + tc.version)
			before.SetKind("Drink")
			var err error
			// The reconciler writes status meanwhile; a conflict is not the
			// answer under test, so try again on the newest version.
			for range 10 {
				if gerr := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "typed"}, before); gerr != nil {
					t.Fatal(gerr)
				}
				obj := before.DeepCopy()
				if serr := unstructured.SetNestedField(obj.Object, value, "spec", tc.field); serr != nil {
					t.Fatal(serr)
				}
				if err = k8s.Update(ctx, obj); !apierrors.IsConflict(err) {
					break
				}
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("update: %v, want 422 Invalid", err)
			}
			for _, w := range []string{"spec." + tc.field + ":", tc.want} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
			after := &unstructured.Unstructured{}
			after.SetGroupVersionKind(before.GroupVersionKind())
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(before), after); err != nil {
				t.Fatal(err)
			}
			if after.GetGeneration() != before.GetGeneration() {
				t.Errorf("rejected update changed the spec (generation %d -> %d)", before.GetGeneration(), after.GetGeneration())
			}
		})
	}
}

// TestConversionPassesThrough: in a review of several objects, those the
// converter takes are converted, one it cannot take comes back unconverted
// under the target version's names, and the review succeeds.
func TestConversionPassesThrough(t *testing.T) {
	hc, base := webhookServer()
	review := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"3","desiredAPIVersion":"example.com/v1","objects":[` +
		`{"apiVersion":"example.com/v1beta1","kind":"Drink","metadata":{"name":"good"},"spec":{"name":"x","drink":"tea","sugar":2}},` +
		`{"apiVersion":"example.com/v1beta1","kind":"Drink","metadata":{"name":"bad"},"spec":{"name":"x","drink":"tea","sugar":"lots"}}]}}`
	resp, err := hc.Post(base+"/convert", "application/json", strings.NewReader(review))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var got struct {
		Response struct {
			Result           struct{ Status string }
			ConvertedObjects []map[string]any
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"apiVersion": "example.com/v1", "kind": "Drink", "spec": map[string]any{"displayName": "x", "beverage": "tea", "sugarCubes": 2.0}},
		{"apiVersion": "example.com/v1", "kind": "Drink", "spec": map[string]any{"displayName": "x", "beverage": "tea", "sugarCubes": "lots"}},
	}
	if got.Response.Result.Status != "Success" || len(got.Response.ConvertedObjects) != len(want) {
		t.Fatalf("review answered %+v", got.Response)
	}
	for i, w := range want {
		obj := got.Response.ConvertedObjects[i]
		delete(obj, "metadata")
		delete(obj, "status")
		if !apiequality.Semantic.DeepEqual(w, obj) {
			t.Errorf("object %d: %v, want %v", i, obj, w)
		}
	}
}

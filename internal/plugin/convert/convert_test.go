package convert

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/example/myoperator/test/framework/drinkgamma"
)

// manifests are v1 Drinks that each need something of conversion: fields a
// spoke lacks, the course's fields, a user's own conversion-data
// annotation, a status, and nothing at all.
var manifests = map[string]string{
	"empty spec": `apiVersion: example.com/v1
kind: Drink
metadata:
  name: empty
spec: {}
`,
	"every field": `apiVersion: example.com/v1
kind: Drink
metadata:
  name: full
  namespace: cafe
  labels: {team: bar}
  annotations: {example.com/authored-version: v1}
spec:
  displayName: Flat white
  beverage: coffee
  size: Large
  sugarCubes: 2
  extras: [oat milk, cinnamon]
status:
  authoredVersion: v1
  configMapName: full
`,
	"course form": `apiVersion: example.com/v1
kind: Drink
metadata:
  name: course
spec:
  name: Tea
  drink: green tea
`,
	"course and own fields": `apiVersion: example.com/v1
kind: Drink
metadata:
  name: both
spec:
  displayName: Tea
  beverage: green tea
  name: Tea
  drink: green tea
  sugarCubes: 1
`,
	"user's own conversion-data annotation": `apiVersion: example.com/v1
kind: Drink
metadata:
  name: annotated
  annotations:
    example.com/conversion-data: '{"mine": true}'
spec:
  displayName: Mocha
  beverage: coffee
  extras: [cream]
`,
}

// TestRoundTripEveryPair converts each Drink to version a, then to b, then
// back to a and to v1: every step must give back what it started from.
func TestRoundTripEveryPair(t *testing.T) {
	for name, hub := range manifests {
		for _, a := range Versions() {
			for _, b := range Versions() {
				t.Run(name+"/"+a+"->"+b, func(t *testing.T) {
					inA := mustConvert(t, []byte(hub), a)
					inB := mustConvert(t, inA, b)
					if got := mustConvert(t, inB, a); !equalYAML(t, got, inA) {
						t.Errorf("%s -> %s -> %s lost something:\n%s", a, b, a, cmp.Diff(string(inA), string(got)))
					}
					if got := mustConvert(t, inB, "v1"); !equalYAML(t, got, []byte(hub)) {
						t.Errorf("v1 -> %s -> %s -> v1 lost something:\n%s", a, b, cmp.Diff(hub, string(got)))
					}
				})
			}
		}
	}
}

// TestSpokeKeepsLostFieldsInAnnotation: a version without extras carries
// them in the conversion-data annotation, and nothing else of the spec is
// dropped or renamed wrongly.
func TestSpokeKeepsLostFieldsInAnnotation(t *testing.T) {
	out := string(mustConvert(t, []byte(manifests["every field"]), "v1alpha1"))
	for _, want := range []string{"apiVersion: example.com/v1alpha1", "name: Flat white", "drink: coffee", "example.com/conversion-data:", "oat milk", `"size":"Large"`, `"sugarCubes":2`} {
		if !strings.Contains(out, want) {
			t.Errorf("v1alpha1 output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "creationTimestamp") {
		t.Errorf("output carries creationTimestamp, which the manifest did not:\n%s", out)
	}
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct{ name, doc, to, want string }{
		{"unknown field", "apiVersion: example.com/v1beta1\nkind: Drink\nmetadata: {name: x}\nspec: {name: a, drink: b, extras: [c]}\n", "v1", `unknown field "extras"`},
		{"not a Drink", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "v1", `kind "ConfigMap": only Drinks`},
		{"unknown version", "apiVersion: example.com/v2\nkind: Drink\nmetadata: {name: x}\n", "v1", `apiVersion "example.com/v2"`},
		{"unknown target", manifests["empty spec"], "v2", `--to "v2": must be one of`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Document([]byte(tc.doc), tc.to)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestStream: documents in, documents out, in order, comments-only
// documents skipped, and the document's number in an error.
func TestStream(t *testing.T) {
	in := manifests["course form"] + "---\n# only a comment\n---\n" + manifests["every field"]
	var out bytes.Buffer
	first := true
	if err := Stream(&out, strings.NewReader(in), "stdin", "v1beta1", &first); err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(out.String(), "---\n")
	if len(docs) != 2 || !strings.Contains(docs[0], "name: course") || !strings.Contains(docs[1], "name: full") {
		t.Fatalf("want two documents, course then full; got:\n%s", out.String())
	}
	err := Stream(&out, strings.NewReader(in+"---\napiVersion: v1\nkind: Secret\n"), "in.yaml", "v1", &first)
	if err == nil || !strings.Contains(err.Error(), "in.yaml: document 4") {
		t.Errorf("error %v, want one naming in.yaml: document 4", err)
	}
}

// TestList: a List, as kubectl get -o yaml prints it, converts item by
// item and stays a List; an item that is not a Drink is named.
func TestList(t *testing.T) {
	l := "apiVersion: v1\nkind: List\nmetadata: {resourceVersion: \"\"}\nitems:\n"
	for _, name := range []string{"course form", "every field"} {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(manifests[name]), &m); err != nil {
			t.Fatal(err)
		}
		item, err := yaml.Marshal([]any{m})
		if err != nil {
			t.Fatal(err)
		}
		l += string(item)
	}
	out := string(mustConvert(t, []byte(l), "v1alpha1"))
	for _, want := range []string{"kind: List", "- apiVersion: example.com/v1alpha1", "name: course", "name: full", "example.com/conversion-data"} {
		if !strings.Contains(out, want) {
			t.Errorf("converted List lacks %q:\n%s", want, out)
		}
	}
	back := mustConvert(t, []byte(out), "v1")
	if !strings.Contains(string(back), "- oat milk") || strings.Contains(string(back), "conversion-data") {
		t.Errorf("the List back in v1 lost extras or kept the annotation:\n%s", back)
	}
	_, err := Document([]byte(l+"- {apiVersion: v1, kind: Secret}\n"), "v1")
	if err == nil || !strings.Contains(err.Error(), `items[2]: kind "Secret"`) {
		t.Errorf("error %v, want one naming items[2]", err)
	}
}

func mustConvert(t *testing.T, doc []byte, to string) []byte {
	t.Helper()
	out, err := Document(doc, to)
	if err != nil {
		t.Fatalf("converting to %s: %v\n%s", to, err, doc)
	}
	return out
}

func equalYAML(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := yaml.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return cmp.Equal(x, y)
}

// TestFourthVersion: with a fourth version in the Go versions and the table
// (test/framework/drinkgamma), convert writes it and reads it with no change
// to this package; the built-in lists refuse it.
func TestFourthVersion(t *testing.T) {
	four := converter{versions: drinkgamma.Versions(), table: drinkgamma.Table()}
	out, err := four.document([]byte(manifests["every field"]), drinkgamma.Version)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := yaml.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got["apiVersion"] != "example.com/v1gamma1" || got["spec"].(map[string]any)["title"] != "Flat white" {
		t.Errorf("v1 -> v1gamma1:\n%s", out)
	}
	back, err := four.document(out, "v1alpha1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(back), "apiVersion: example.com/v1alpha1") || !strings.Contains(string(back), "name: Flat white") {
		t.Errorf("v1gamma1 -> v1alpha1:\n%s", back)
	}
	if _, err := Document(out, "v1"); err == nil || !strings.Contains(err.Error(), `apiVersion "example.com/v1gamma1"`) {
		t.Errorf("the built-in lists read a v1gamma1 Drink: %v", err)
	}
	if _, err := Document([]byte(manifests["every field"]), drinkgamma.Version); err == nil {
		t.Error("the built-in lists wrote v1gamma1")
	}
}

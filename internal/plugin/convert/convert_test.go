package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/example/myoperator/test/framework/drinkgamma"
	"github.com/example/myoperator/test/framework/testutil"
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
			_, err := builtIn.document([]byte(tc.doc), tc.to)
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
	_, err := builtIn.document([]byte(l+"- {apiVersion: v1, kind: Secret}\n"), "v1")
	if err == nil || !strings.Contains(err.Error(), `items[2]: kind "Secret"`) {
		t.Errorf("error %v, want one naming items[2]", err)
	}
}

func mustConvert(t *testing.T, doc []byte, to string) []byte {
	t.Helper()
	out, err := builtIn.document(doc, to)
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
	if _, err := builtIn.document(out, "v1"); err == nil || !strings.Contains(err.Error(), `apiVersion "example.com/v1gamma1"`) {
		t.Errorf("the built-in lists read a v1gamma1 Drink: %v", err)
	}
	if _, err := builtIn.document([]byte(manifests["every field"]), drinkgamma.Version); err == nil {
		t.Error("the built-in lists wrote v1gamma1")
	}
}

// jsonList is a v1 List of 300 Drinks as kubectl get -o json prints it
// (compact when oneLine: no newline anywhere), each with a note of 200
// bytes in an annotation: 120 KiB in all.
func jsonList(t *testing.T, oneLine bool) string {
	const pad = 200
	t.Helper()
	items := make([]any, 300)
	for i := range items {
		items[i] = map[string]any{"apiVersion": "example.com/v1", "kind": "Drink",
			"metadata": map[string]any{"name": fmt.Sprintf("d%d", i), "namespace": "cafe", "annotations": map[string]any{"note": strings.Repeat("x", pad)}},
			"spec":     map[string]any{"displayName": "Tea", "beverage": "tea", "extras": []any{"milk"}}}
	}
	l := map[string]any{"apiVersion": "v1", "items": items, "kind": "List", "metadata": map[string]any{"resourceVersion": ""}}
	var b []byte
	var err error
	if oneLine {
		b, err = json.Marshal(l)
	} else {
		b, err = json.MarshalIndent(l, "", "    ")
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

// TestStreamBounded: convert holds one document of at most the bound (64
// KiB here, MaxDocumentBytes in the plugin). A larger YAML document, or a
// larger JSON object that is not a List, is refused, naming the document;
// a larger JSON List (kubectl get -o json) converts item by item, each
// within the bound, and the documents after it still convert.
func TestStreamBounded(t *testing.T) {
	const bound = 64 << 10
	big := strings.Repeat("x", bound)
	drink := func(format string) string { return fmt.Sprintf(format, big) }
	for _, tc := range []struct {
		name, in string
		items    int // converted List items, when it converts
		err      string
	}{
		{"a List of 300 Drinks, 120 KiB, indented", jsonList(t, false), 300, ""},
		{"the same on one line", jsonList(t, true), 300, ""},
		{"a large List, then a Drink", jsonList(t, false) + "---\n" + manifests["course form"], 300, ""},
		{"a YAML Drink past the bound", drink("apiVersion: example.com/v1\nkind: Drink\nmetadata:\n  name: big\n  annotations: {note: %s}\nspec: {}\n"), 0,
			"in.yaml: document 1 is larger than 3 MiB, the most the API server takes in one request: no Drink that large can exist; give a List that large as JSON"},
		{"a YAML List past the bound", "apiVersion: v1\nkind: List\nitems:\n" + strings.Repeat("- {apiVersion: example.com/v1, kind: Drink, metadata: {name: a}, spec: {}}\n", 2000), 0,
			"in.yaml: document 1 is larger than 3 MiB"},
		{"a JSON Drink past the bound", drink(`{"apiVersion": "example.com/v1", "kind": "Drink", "metadata": {"name": "big", "annotations": {"note": "%s"}}, "spec": {}}`), 0,
			`in.yaml: document 1: apiVersion "example.com/v1": a document larger than 3 MiB, the most the API server takes in one request converts only as a v1 List`},
		{"a JSON List with one item past the bound", strings.Replace(jsonList(t, false), `"name": "d7"`, `"name": "d7", "labels": {"note": "`+big+`"}`, 1), 0,
			"in.yaml: document 1: items[7]: larger than 3 MiB"},
		{"a JSON List of a Secret", strings.Replace(jsonList(t, false), `"kind": "Drink"`, `"kind": "Secret"`, 1), 0,
			`in.yaml: document 1: items[0]: kind "Secret": only Drinks`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			first := true
			err := builtIn.stream(&out, strings.NewReader(tc.in), "in.yaml", "v1alpha1", &first, bound)
			if testutil.CheckErr(t, err, tc.err) {
				return
			}
			docs := strings.Split(out.String(), "---\n")
			var l struct {
				Kind  string
				Items []map[string]any
			}
			if err := yaml.Unmarshal([]byte(docs[0]), &l); err != nil {
				t.Fatalf("the converted List: %v\n%.2000s", err, docs[0])
			}
			if l.Kind != "List" || len(l.Items) != tc.items {
				t.Fatalf("kind %q with %d items, want a List of %d", l.Kind, len(l.Items), tc.items)
			}
			for i, item := range l.Items {
				if item["apiVersion"] != "example.com/v1alpha1" || item["metadata"].(map[string]any)["name"] != fmt.Sprintf("d%d", i) {
					t.Fatalf("items[%d]: %v %v, want example.com/v1alpha1 d%d", i, item["apiVersion"], item["metadata"], i)
				}
			}
			// What v1alpha1 cannot hold (extras) is kept, so back in v1 the
			// List is what it was.
			var back bytes.Buffer
			first = true
			if err := Stream(&back, strings.NewReader(docs[0]), "out", "v1", &first); err != nil || !strings.Contains(back.String(), "- milk") {
				t.Errorf("the converted List back in v1: %v\n%.500s", err, back.String())
			}
			if strings.Contains(tc.in, "---") && (len(docs) != 2 || !strings.Contains(docs[1], "name: course")) {
				t.Errorf("the Drink after the List: %d documents\n%.300s", len(docs), docs[len(docs)-1])
			}
		})
	}
}

package convert

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/example/myoperator/apis/drinks"
	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
)

// converter converts between the Go versions of versions, writing those
// that table serves. The plugin's is builtIn; a test adds a version to both.
type converter struct {
	versions drinks.Versions
	table    drinksversions.Table
}

var builtIn = converter{versions: drinks.Default, table: drinksversions.Drinks}

// Versions are the versions convert writes: every served Drink version.
func Versions() []string { return builtIn.table.Served() }

// document converts one Drink manifest (YAML or JSON), or a v1 List of
// them (kubectl get -o yaml), to the version to and returns it as YAML.
// Unknown fields are refused, naming the field: conversion would otherwise
// drop them.
func (c converter) document(doc []byte, to string) ([]byte, error) {
	served := c.table.Served()
	if !slices.Contains(served, to) {
		return nil, fmt.Errorf("--to %q: must be one of %s", to, drinksversions.List(served))
	}
	var head metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return nil, err
	}
	if head.APIVersion == "v1" && head.Kind == "List" {
		return c.list(doc, to)
	}
	out, err := c.convert(doc, to)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(out)
}

// convert converts one Drink to version to, as a map.
func (c converter) convert(doc []byte, to string) (map[string]any, error) {
	out, err := c.decodeAndConvert(doc, to)
	if err != nil {
		return nil, err
	}
	return toMap(out)
}

// list converts every item of a v1 List (what kubectl get -o yaml
// prints) and keeps the List around them.
func (c converter) list(doc []byte, to string) ([]byte, error) {
	var l struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   map[string]any    `json:"metadata,omitempty"`
		Items      []json.RawMessage `json:"items"`
	}
	if err := yaml.UnmarshalStrict(doc, &l); err != nil {
		return nil, err
	}
	items := make([]any, 0, len(l.Items))
	for i, item := range l.Items {
		out, err := c.convert(item, to)
		if err != nil {
			return nil, fmt.Errorf("items[%d]: %w", i, err)
		}
		items = append(items, out)
	}
	out := map[string]any{"apiVersion": l.APIVersion, "kind": l.Kind, "items": items}
	if l.Metadata != nil {
		out["metadata"] = l.Metadata
	}
	return yaml.Marshal(out)
}

// decodeAndConvert decodes a Drink in any version and converts it to
// version to.
func (c converter) decodeAndConvert(doc []byte, to string) (runtime.Object, error) {
	var head metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return nil, err
	}
	gv := drinksv1.GroupVersion
	if head.Kind != "Drink" {
		return nil, fmt.Errorf("kind %q: only Drinks (%s) convert", head.Kind, gv.Group)
	}
	version, inGroup := strings.CutPrefix(head.APIVersion, gv.Group+"/")
	src, err := c.versions.New(version)
	if !inGroup || err != nil {
		return nil, fmt.Errorf("apiVersion %q: a Drink's is %s/ followed by one of %s", head.APIVersion, gv.Group, drinksversions.List(c.table.Served()))
	}
	if err := strict(doc, src); err != nil {
		return nil, err
	}
	return c.versions.Convert(context.Background(), src, to)
}

func strict(doc []byte, obj any) error {
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return fmt.Errorf("%w (convert keeps every field, so it refuses one the version does not have)", err)
	}
	return nil
}

// toMap returns obj as a map without the fields a typed object always
// has but a manifest leaves out (creationTimestamp: null, an empty
// status), and with its spec even when empty.
func toMap(obj runtime.Object) (map[string]any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	if ts, ok := u.Object["metadata"].(map[string]any); ok && ts["creationTimestamp"] == nil {
		delete(ts, "creationTimestamp")
	}
	if _, ok := u.Object["spec"]; !ok {
		u.Object["spec"] = map[string]any{} // an empty spec is still written
	}
	if s, ok := u.Object["status"].(map[string]any); ok && len(s) == 0 {
		delete(u.Object, "status")
	}
	return u.Object, nil
}

// Stream converts every document of r to version to and writes them to w
// as one multi-document YAML stream. name says where r comes from, for
// errors. Empty documents are skipped. It holds one document at a time,
// of at most MaxDocumentBytes: a larger one is refused, unless it is a
// JSON List (kubectl get -o json), which is converted item by item.
func Stream(w io.Writer, r io.Reader, name, to string, first *bool) error {
	return builtIn.stream(w, r, name, to, first, MaxDocumentBytes)
}

func (c converter) stream(w io.Writer, r io.Reader, name, to string, first *bool, maxBytes int) error {
	in := bufio.NewReaderSize(r, 64<<10)
	docs := &docReader{r: in, max: maxBytes}
	for n := 1; ; n++ {
		doc, err := docs.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		large := errors.Is(err, errTooLarge)
		if err != nil && !large {
			return fmt.Errorf("%s: reading document %d: %w", name, n, err)
		}
		if !large && len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var out []byte
		if !large {
			if out, err = c.document(doc, to); err != nil {
				return fmt.Errorf("%s: document %d: %w", name, n, err)
			}
		} else if head := bytes.TrimLeft(doc, " \t\r\n"); len(head) == 0 || head[0] != '{' {
			return fmt.Errorf("%s: document %d is %w: no Drink that large can exist; give a List that large as JSON (kubectl get -o json), which convert reads item by item", name, n, errTooLarge)
		}
		if !*first {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		*first = false
		if !large {
			if _, err := w.Write(out); err != nil {
				return err
			}
			continue
		}
		rest, err := c.jsonList(w, io.MultiReader(bytes.NewReader(doc), in), to, int64(maxBytes))
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", name, n, err)
		}
		// The documents after the List: what the JSON decoder read ahead,
		// then the rest of the input.
		in = bufio.NewReaderSize(io.MultiReader(rest, in), 64<<10)
		docs = &docReader{r: in, max: maxBytes}
	}
}

// stripComments drops comment lines, so that a document of comments alone
// counts as empty.
func stripComments(doc []byte) []byte {
	var out []byte
	for line := range bytes.Lines(doc) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] == '#' {
			continue
		}
		out = append(out, line...)
	}
	return out
}

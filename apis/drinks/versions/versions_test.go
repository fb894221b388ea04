package versions_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
	drinksv1beta1 "github.com/example/myoperator/apis/drinks/v1beta1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
)

// TestDrinksIsConsistent: the table holds together, its hub is the Go
// package the hub types live in, and every Go package of a Drink version
// has its row.
func TestDrinksIsConsistent(t *testing.T) {
	if err := drinksversions.Drinks.Check(); err != nil {
		t.Fatal(err)
	}
	if got, want := drinksversions.Drinks.Hub().Name, drinksv1.GroupVersion.Version; got != want {
		t.Errorf("hub %q, the hub types are %s", got, drinksv1.GroupVersion)
	}
	for _, gv := range []string{drinksv1alpha1.GroupVersion.Version, drinksv1beta1.GroupVersion.Version, drinksv1.GroupVersion.Version} {
		if v, ok := drinksversions.Drinks.Lookup(gv); !ok || !v.Served {
			t.Errorf("Go package of %s: no served row in the table", gv)
		}
	}
}

// TestTableMatchesCRD: what the table says of each version is what the
// generated CRD (config/crd/bases, from the Go types and their markers)
// says: served, storage, deprecated and its warning, and the spec fields.
func TestTableMatchesCRD(t *testing.T) {
	data, err := os.ReadFile("../../../config/crd/bases/example.com_drinks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := map[string]any{}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	versions, _, err := unstructured.NestedSlice(crd, "spec", "versions")
	if err != nil || len(versions) == 0 {
		t.Fatalf("spec.versions: %v", err)
	}
	inCRD := map[string]bool{}
	for _, raw := range versions {
		cv := raw.(map[string]any)
		name, _, _ := unstructured.NestedString(cv, "name")
		inCRD[name] = true
		v, ok := drinksversions.Drinks.Lookup(name)
		if !ok {
			t.Errorf("CRD version %s: not in the table", name)
			continue
		}
		served, _, _ := unstructured.NestedBool(cv, "served")
		storage, _, _ := unstructured.NestedBool(cv, "storage")
		deprecated, _, _ := unstructured.NestedBool(cv, "deprecated")
		warning, _, _ := unstructured.NestedString(cv, "deprecationWarning")
		props, _, _ := unstructured.NestedMap(cv, "schema", "openAPIV3Schema", "properties", "spec", "properties")
		var fields []string
		for f := range props {
			fields = append(fields, f)
		}
		slices.Sort(fields)
		type row struct {
			Served, Storage, Deprecated bool
			Warning                     string
			Fields                      []string
		}
		want := row{served, storage, deprecated, warning, fields}
		got := row{v.Served, v.Storage, v.Deprecated, v.DeprecationWarning, slices.Sorted(slices.Values(v.Fields))}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("version %s: the table differs from the CRD (-crd +table):\n%s", name, diff)
		}
	}
	for _, v := range drinksversions.Drinks {
		if v.Served && !inCRD[v.Name] {
			t.Errorf("version %s: served in the table, absent from the CRD", v.Name)
		}
	}
}

// TestHubOnly: what each version cannot hold, in the hub's order.
func TestHubOnly(t *testing.T) {
	for _, tc := range []struct {
		version string
		want    []string
	}{
		// The course's fields of v1 are hub fields that no spoke holds:
		// the spokes' own name and drink hold displayName and beverage.
		{"v1alpha1", []string{"size", "sugarCubes", "extras", "name", "drink"}},
		{"v1beta1", []string{"extras", "name", "drink"}},
		{"v1", nil},
		{"v9", nil},
	} {
		if got := drinksversions.Drinks.HubOnly(tc.version); !slices.Equal(got, tc.want) {
			t.Errorf("HubOnly(%s) = %v, want %v", tc.version, got, tc.want)
		}
	}
}

// TestLayouts pins the ConfigMap layouts: apps read them, so a change is a
// change of the product's contract.
func TestLayouts(t *testing.T) {
	hub := map[string]string{
		"displayName": "Cup", "beverage": "tea", "size": "Large", "sugarCubes": "2",
		"extras": drinksversions.JoinList([]string{"mint", "lemon"}),
	}
	for _, tc := range []struct {
		version string
		want    map[string]string
	}{
		{"v1alpha1", map[string]string{"name": "Cup", "drink": "tea"}},
		{"v1beta1", map[string]string{"name": "Cup", "drink": "tea", "size": "Large", "sugar": "2"}},
		{"v1", map[string]string{"displayName": "Cup", "beverage": "tea", "size": "Large", "sugarCubes": "2", "extras": "lemon,mint"}},
		// The course's own example.com/v1 Drink: exactly the course's keys.
		{"v1+course", map[string]string{"name": "Cup", "drink": "tea"}},
	} {
		layout := drinksversions.Drinks.Layout(tc.version)
		got := drinksversions.Render(layout, func(f string) string { return hub[f] })
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s layout (-want +got):\n%s", tc.version, diff)
		}
		if keys := drinksversions.LayoutKeys(layout); !slices.IsSorted(keys) || len(keys) != len(tc.want) {
			t.Errorf("%s layout keys %v", tc.version, keys)
		}
	}
}

// TestLayoutName: the course form has a layout of its own only in the
// version that has course fields.
func TestLayoutName(t *testing.T) {
	for _, tc := range []struct {
		version string
		course  bool
		want    string
	}{
		{"v1", false, "v1"},
		{"v1", true, "v1+course"},
		{"v1alpha1", true, "v1alpha1"},
		{"v9", true, "v9"},
	} {
		if got := drinksversions.Drinks.LayoutName(tc.version, tc.course); got != tc.want {
			t.Errorf("LayoutName(%s, %v) = %q, want %q", tc.version, tc.course, got, tc.want)
		}
	}
	if got := drinksversions.Drinks.Layout("v9+course"); got != nil {
		t.Errorf("Layout(v9+course) = %v, want none", got)
	}
}

// TestCheck: each way a table can be wrong is found.
func TestCheck(t *testing.T) {
	edit := func(f func(t drinksversions.Table) drinksversions.Table) drinksversions.Table {
		c := slices.Clone(drinksversions.Drinks)
		return f(c)
	}
	for _, tc := range []struct {
		name  string
		table drinksversions.Table
		want  string // substring of the error; empty means consistent
	}{
		{"as built", drinksversions.Drinks, ""},
		{"a fourth version", edit(func(t drinksversions.Table) drinksversions.Table {
			return append(t, drinksversions.Version{Name: "v1gamma1", Served: true, Fields: []string{"beverage"}})
		}), ""},
		{"a repeated name", edit(func(t drinksversions.Table) drinksversions.Table { return append(t, t[0]) }), "repeated name"},
		{"two storage versions", edit(func(t drinksversions.Table) drinksversions.Table {
			t[1].Storage = true
			return t
		}), "2 storage versions"},
		{"no storage version", edit(func(t drinksversions.Table) drinksversions.Table { return t[:2] }), "0 storage versions"},
		{"a field the hub lacks", edit(func(t drinksversions.Table) drinksversions.Table {
			t[1].Fields = append(slices.Clone(t[1].Fields), "milk")
			return t
		}), "field milk"},
		{"a layout of a field the hub lacks", edit(func(t drinksversions.Table) drinksversions.Table {
			t[0].Layout = map[string]string{"name": "title"}
			return t
		}), "layout key name holds title"},
		{"course fields in a spoke", edit(func(t drinksversions.Table) drinksversions.Table {
			t[1].Course = map[string]string{"name": "drink"}
			return t
		}), "course field name"},
		{"a course field that stands for a field the hub lacks", edit(func(t drinksversions.Table) drinksversions.Table {
			t[2].Course = map[string]string{"name": "title"}
			return t
		}), "course field name for title"},
		{"a course layout of a course field", edit(func(t drinksversions.Table) drinksversions.Table {
			t[2].CourseLayout = map[string]string{"name": "name"}
			return t
		}), "course layout key name holds name"},
		{"deprecated without a warning", edit(func(t drinksversions.Table) drinksversions.Table {
			t[1].Deprecated = true
			return t
		}), "deprecated without a warning"},
		{"two legacy versions", edit(func(t drinksversions.Table) drinksversions.Table {
			t[1].Legacy = true
			return t
		}), "2 legacy versions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.table.Check()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Check: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Check: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestOrDrinks: the zero value of a consumer's table is the table as built.
func TestOrDrinks(t *testing.T) {
	var empty drinksversions.Table
	if got := empty.OrDrinks(); len(got) != len(drinksversions.Drinks) {
		t.Errorf("empty.OrDrinks() has %d versions, want %d", len(got), len(drinksversions.Drinks))
	}
	one := drinksversions.Table{drinksversions.Drinks.Hub()}
	if got := one.OrDrinks(); len(got) != 1 {
		t.Errorf("a table of one became %d versions", len(got))
	}
}

func TestList(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{nil, ""},
		{[]string{"v1"}, "v1"},
		{[]string{"v1alpha1", "v1beta1"}, "v1alpha1 and v1beta1"},
		{[]string{"v1alpha1", "v1beta1", "v1"}, "v1alpha1, v1beta1 and v1"},
	} {
		if got := drinksversions.List(tc.names); got != tc.want {
			t.Errorf("List(%v) = %q, want %q", tc.names, got, tc.want)
		}
	}
}

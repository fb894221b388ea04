package migrate

import (
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	drinksversions "github.com/example/myoperator/apis/drinks/versions"
)

// TestFourthDrinkVersion: the migration's history is the table's. With
// v1gamma1 added to a copy of the table, a CRD that serves the three
// versions as built no longer serves every version a release served, so
// managedFields entries may name one it does not and the cleanup runs; a
// CRD serving all four needs none. A table whose legacy version moved
// records that one on Drinks without a record. No change to the migration
// takes part; a list of versions kept here would fail.
func TestFourthDrinkVersion(t *testing.T) {
	four := append(slices.Clone(drinksversions.Drinks), drinksversions.Version{Name: "v1gamma1", Served: true, Fields: []string{"beverage"}})
	if err := four.Check(); err != nil {
		t.Fatal(err)
	}
	crd := func(versions ...string) *apiextensionsv1.CustomResourceDefinition {
		c := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com"}}
		for _, v := range versions {
			c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true, Storage: v == "v1"})
		}
		return c
	}
	three := crd("v1", "v1alpha1", "v1beta1")
	for _, tc := range []struct {
		name          string
		table         drinksversions.Table
		crd           *apiextensionsv1.CustomResourceDefinition
		wantAllServed bool
	}{
		{"as built, three served", nil, three, true},
		{"four known, three served", four, three, false},
		{"four known, four served", four, crd("v1", "v1alpha1", "v1beta1", "v1gamma1"), true},
		{"as built, v1alpha1 removed", nil, crd("v1", "v1beta1"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Migrator{versions: tc.table}
			if got := allServed(tc.crd, m.table()); got != tc.wantAllServed {
				t.Errorf("allServed = %v, want %v", got, tc.wantAllServed)
			}
		})
	}

	// The legacy version is the table's, found among the stored versions.
	movedLegacy := slices.Clone(four)
	movedLegacy[0].Legacy, movedLegacy[3].Legacy = false, true
	for _, tc := range []struct {
		name   string
		table  drinksversions.Table
		stored []string
		want   string
	}{
		{"as built, stored in v1alpha1", drinksversions.Drinks, []string{"v1alpha1", "v1"}, "v1alpha1"},
		{"as built, never stored in v1alpha1", drinksversions.Drinks, []string{"v1beta1", "v1"}, ""},
		{"legacy moved to v1gamma1", movedLegacy, []string{"v1gamma1", "v1"}, "v1gamma1"},
		{"legacy moved, stored in v1alpha1", movedLegacy, []string{"v1alpha1", "v1"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := legacyVersion(tc.table, tc.stored); got != tc.want {
				t.Errorf("legacyVersion(%v) = %q, want %q", tc.stored, got, tc.want)
			}
		})
	}
}

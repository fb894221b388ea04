package conversion_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/example/myoperator/apis/drinks/conversion"
	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
)

// TestSpecFieldsCoverHub: CopySpecFields and EqualSpecFields know every
// spec field of the hub type by the JSON name the table uses, and each
// name reaches exactly its own field.
func TestSpecFieldsCoverHub(t *testing.T) {
	hubFields := drinksversions.Drinks.Hub().Fields
	if got := slices.Sorted(maps.Keys(toMap(t, full())["spec"].(map[string]any))); !slices.Equal(got, slices.Sorted(slices.Values(hubFields))) {
		t.Fatalf("the hub type's spec fields are %v, the table's hub has %v", got, hubFields)
	}
	for _, f := range hubFields {
		var dst drinksv1.DrinkSpec
		conversion.CopySpecFields(&dst, &full().Spec, []string{f})
		data, err := json.Marshal(dst)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[f] == nil {
			t.Errorf("CopySpecFields(%s) copied %v", f, got)
		}
		if !conversion.EqualSpecFields(&dst, &full().Spec, []string{f}) {
			t.Errorf("EqualSpecFields(%s) after the copy: false", f)
		}
		if conversion.EqualSpecFields(&drinksv1.DrinkSpec{}, &full().Spec, []string{f}) {
			t.Errorf("EqualSpecFields(%s) of an empty and a full spec: true", f)
		}
	}
	if conversion.EqualSpecFields(&drinksv1.DrinkSpec{}, &drinksv1.DrinkSpec{}, []string{"milk"}) {
		t.Error("EqualSpecFields of a field the hub does not have: true")
	}
}

// TestFourthDrinkVersion: a table with one more version, v1gamma1, moves
// values to and from that version's field names with no change here; the
// table as built does not know it.
func TestFourthDrinkVersion(t *testing.T) {
	four := append(slices.Clone(drinksversions.Drinks), drinksversions.Version{
		Name: "v1gamma1", Served: true,
		Fields:  []string{"title", "beverage", "sugarCubes"},
		Renames: map[string]string{"title": "displayName"},
	})
	if err := four.Check(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		table   drinksversions.Table
		obj     map[string]any
		to      string
		want    map[string]any
		wantErr bool
	}{
		{
			name: "v1gamma1 to v1", table: four,
			obj:  map[string]any{"apiVersion": "example.com/v1gamma1", "spec": map[string]any{"title": "x", "beverage": "tea"}},
			to:   "example.com/v1",
			want: map[string]any{"apiVersion": "example.com/v1", "spec": map[string]any{"displayName": "x", "beverage": "tea"}},
		},
		{
			name: "v1alpha1 to v1gamma1", table: four,
			obj:  map[string]any{"apiVersion": "example.com/v1alpha1", "spec": map[string]any{"name": "x", "drink": "tea"}},
			to:   "example.com/v1gamma1",
			want: map[string]any{"apiVersion": "example.com/v1gamma1", "spec": map[string]any{"title": "x", "beverage": "tea"}},
		},
		{
			name: "v1gamma1 unknown to the table as built", table: drinksversions.Drinks,
			obj: map[string]any{"apiVersion": "example.com/v1", "spec": map[string]any{}}, to: "example.com/v1gamma1", wantErr: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := conversion.PassThroughIn(tc.table, tc.obj, tc.to)
			if (err != nil) != tc.wantErr {
				t.Fatalf("PassThroughIn: %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, tc.obj); !tc.wantErr && diff != "" {
				t.Errorf("pass-through (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAgreeCourseFields: the course's names and v1's own end up holding
// one value, or two written now that differ are left for validation.
func TestAgreeCourseFields(t *testing.T) {
	course := drinksv1.DrinkSpec{Name: "a", Drink: "tea", DisplayName: "a", Beverage: "tea"}
	with := func(edit func(s *drinksv1.DrinkSpec)) *drinksv1.DrinkSpec {
		s := course
		edit(&s)
		return &s
	}
	for _, tc := range []struct {
		name   string
		d, old *drinksv1.DrinkSpec
		want   drinksv1.DrinkSpec
	}{
		{"the course's Drink created", &drinksv1.DrinkSpec{Name: "a", Drink: "tea"}, nil, course},
		{"v1's own form untouched", &drinksv1.DrinkSpec{DisplayName: "a", Beverage: "tea"}, nil,
			drinksv1.DrinkSpec{DisplayName: "a", Beverage: "tea"}},
		{"created with both forms differing: left to refuse",
			&drinksv1.DrinkSpec{Name: "a", DisplayName: "b", Drink: "tea"}, nil,
			drinksv1.DrinkSpec{Name: "a", DisplayName: "b", Drink: "tea", Beverage: "tea"}},
		{"course field edited: its field follows", with(func(s *drinksv1.DrinkSpec) { s.Drink = "coffee" }), &course,
			*with(func(s *drinksv1.DrinkSpec) { s.Drink, s.Beverage = "coffee", "coffee" })},
		{"own field edited: the course field follows", with(func(s *drinksv1.DrinkSpec) { s.DisplayName = "b" }), &course,
			*with(func(s *drinksv1.DrinkSpec) { s.Name, s.DisplayName = "b", "b" })},
		{"both edited differently: left to refuse", with(func(s *drinksv1.DrinkSpec) { s.Name, s.DisplayName = "b", "c" }), &course,
			*with(func(s *drinksv1.DrinkSpec) { s.Name, s.DisplayName = "b", "c" })},
		{"stored by the course's operator, then edited in v1beta1",
			&drinksv1.DrinkSpec{Name: "a", Drink: "tea", DisplayName: "b"}, &drinksv1.DrinkSpec{Name: "a", Drink: "tea"},
			drinksv1.DrinkSpec{Name: "b", Drink: "tea", DisplayName: "b", Beverage: "tea"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := *tc.d
			conversion.AgreeCourseFields(nil, &got, tc.old)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			again := got
			conversion.AgreeCourseFields(nil, &again, tc.old)
			if diff := cmp.Diff(got, again); diff != "" {
				t.Errorf("not idempotent (-first +second):\n%s", diff)
			}
		})
	}
}

package model

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRules: docs/DESIGN.md's rules as the model states them, one sequence each.
func TestRules(t *testing.T) {
	v1 := Action{Kind: Create, Name: "d", Version: V1, Method: ByCreate,
		Fields: Fields{DisplayName: "Tea", Beverage: "tea", Size: "Large", SugarCubes: 2, Extras: []string{"mint", "lemon"}}}
	alpha := func(name, drink string) Action {
		return Action{Kind: Update, Name: "d", Version: V1alpha1, Method: ByCreate, Fields: Fields{DisplayName: name, Beverage: drink}}
	}
	for _, tc := range []struct {
		name     string
		seq      []Action
		wantCM   map[string]string // nil: no ConfigMap
		authored string
	}{{
		name:   "v1 layout, extras sorted",
		seq:    []Action{v1},
		wantCM: map[string]string{"displayName": "Tea", "beverage": "tea", "size": "Large", "sugarCubes": "2", "extras": "lemon,mint"}, authored: V1,
	}, {
		name:   "a v1alpha1 update keeps what v1 wrote and moves the layout",
		seq:    []Action{v1, alpha("Chai", "tea")},
		wantCM: map[string]string{"name": "Chai", "drink": "tea"}, authored: V1alpha1,
	}, {
		name:   "an update that changes nothing keeps the authored version",
		seq:    []Action{v1, alpha("Tea", "tea")},
		wantCM: map[string]string{"displayName": "Tea", "beverage": "tea", "size": "Large", "sugarCubes": "2", "extras": "lemon,mint"}, authored: V1,
	}, {
		name: "a foreign key stays, an edited operator key is corrected",
		seq: []Action{v1, {Kind: AddForeignKey, Name: "d", Key: "note", Value: "x"},
			{Kind: EditOperand, Name: "d", Key: "size", Value: "edited"}},
		wantCM: map[string]string{"displayName": "Tea", "beverage": "tea", "size": "Large", "sugarCubes": "2", "extras": "lemon,mint", "note": "x"}, authored: V1,
	}, {
		name:   "Unmanaged leaves a deleted ConfigMap deleted",
		seq:    []Action{v1, {Kind: SetManagement}, {Kind: DeleteOperand, Name: "d"}, alpha("Chai", "tea")},
		wantCM: nil, authored: V1alpha1,
	}, {
		name: "Managed again converges, dropping the old layout's keys",
		seq: []Action{v1, {Kind: SetManagement}, alpha("Chai", "tea"),
			{Kind: EditOperand, Name: "d", Key: "beverage", Value: "x"}, {Kind: SetManagement, Managed: true}},
		wantCM: map[string]string{"name": "Chai", "drink": "tea"}, authored: V1alpha1,
	}, {
		name: "an omitted size gets the defaultSize at write time",
		seq: []Action{{Kind: SetDefaultSize, Size: "Small"},
			{Kind: Create, Name: "d", Version: V1alpha1, Method: ByApply, Fields: Fields{DisplayName: "Tea", Beverage: "tea"}},
			{Kind: SetDefaultSize, Size: "Large"}, {Kind: Update, Name: "d", Version: V1beta1, Method: ByApply,
				Fields: Fields{DisplayName: "Tea", Beverage: "tea", Size: "Small", SugarCubes: 1}}},
		wantCM: map[string]string{"name": "Tea", "drink": "tea", "size": "Small", "sugar": "1"}, authored: V1beta1,
	}, {
		name: "an update that omits the size keeps it",
		seq: []Action{v1, {Kind: SetDefaultSize, Size: "Small"}, {Kind: Update, Name: "d", Version: V1beta1, Method: ByCreate,
			Fields: Fields{DisplayName: "Tea", Beverage: "tea", SugarCubes: 3}}},
		wantCM: map[string]string{"name": "Tea", "drink": "tea", "size": "Large", "sugar": "3"}, authored: V1beta1,
	}, {
		name: "a refused write changes nothing",
		seq: []Action{v1, {Kind: Update, Name: "d", Version: V1, Method: ByCreate,
			Fields: Fields{DisplayName: "Tea", Beverage: "tea", Size: "Small", Extras: []string{"a", "b", "c", "d"}}}},
		wantCM: map[string]string{"displayName": "Tea", "beverage": "tea", "size": "Large", "sugarCubes": "2", "extras": "lemon,mint"}, authored: V1,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			m := New()
			for i, a := range tc.seq {
				if !m.Applicable(a) {
					t.Fatalf("%s: not applicable", a)
				}
				if accepted := m.Step(a); accepted != (i < len(tc.seq)-1 || !strings.HasPrefix(tc.name, "a refused")) {
					t.Fatalf("%s: accepted %v", a, accepted)
				}
			}
			got, ok := m.ConfigMaps["d"]
			if (tc.wantCM == nil) != !ok || !maps.Equal(got, tc.wantCM) {
				t.Errorf("ConfigMap %v, want %v", got, tc.wantCM)
			}
			if m.Drinks["d"].Authored != tc.authored {
				t.Errorf("authored %s, want %s", m.Drinks["d"].Authored, tc.authored)
			}
		})
	}
}

// TestGeneratorIsDeterministic: a seed names one sequence.
func TestGeneratorIsDeterministic(t *testing.T) {
	draw := func() []string {
		g, m := NewGenerator(42), New()
		var out []string
		for range 500 {
			a := g.Next(m)
			m.Step(a)
			out = append(out, a.String())
		}
		return out
	}
	if a, b := draw(), draw(); !slices.Equal(a, b) {
		t.Fatal("the same seed drew two sequences")
	}
}

// TestShrink finds the two actions that fail together.
func TestShrink(t *testing.T) {
	var seq []Action
	for i := range 40 {
		seq = append(seq, Action{Kind: SetDefaultSize, Size: string(rune('a' + i))})
	}
	fails := func(s []Action) bool {
		return slices.ContainsFunc(s, func(a Action) bool { return a.Size == "c" }) &&
			slices.ContainsFunc(s, func(a Action) bool { return a.Size == "x" })
	}
	got := Shrink(seq, fails, time.Now().Add(time.Minute))
	if len(got) != 2 || got[0].Size != "c" || got[1].Size != "x" {
		t.Fatalf("shrunk to %v, want the actions c and x", got)
	}
}

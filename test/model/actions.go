package model

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
)

// Kind is what a user does.
type Kind string

// The kinds of action.
const (
	Create         Kind = "Create"
	Update         Kind = "Update"
	Delete         Kind = "Delete"
	Recreate       Kind = "Recreate" // delete, then create with the same name at once
	EditOperand    Kind = "EditOperand"
	AddForeignKey  Kind = "AddForeignKey"
	DeleteOperand  Kind = "DeleteOperand"
	SetManagement  Kind = "SetManagement"
	SetDefaultSize Kind = "SetDefaultSize"
)

// Fields are what a write sets, as a user of its version names them: a
// v1alpha1 write uses DisplayName (name) and Beverage (drink), v1beta1 also
// Size and SugarCubes (sugar), v1 all. Size "" omits the size.
type Fields struct {
	DisplayName string
	Beverage    string
	Size        string
	SugarCubes  int32
	Extras      []string
}

// Action is one step a user takes. Every action carries all its values, so
// it means the same in any sequence it is replayed in.
type Action struct {
	Kind    Kind
	Name    string // the Drink (and its ConfigMap)
	Version string // Create, Update, Recreate: the version written through
	Method  string // Create, Update, Recreate: ByCreate or ByApply
	Fields  Fields
	Key     string // EditOperand, AddForeignKey
	Value   string // EditOperand, AddForeignKey
	Managed bool   // SetManagement
	Size    string // SetDefaultSize
}

// String renders a as a Go-literal-like line with the field names of its
// version, for a developer to read and replay.
func (a Action) String() string {
	switch a.Kind {
	case Create, Update, Recreate:
		return fmt.Sprintf("{%s %q %s/%s %s}", a.Kind, a.Name, a.Method, a.Version, a.fields())
	case EditOperand, AddForeignKey:
		return fmt.Sprintf("{%s %q data[%q]=%q}", a.Kind, a.Name, a.Key, a.Value)
	case SetManagement:
		state := "Unmanaged"
		if a.Managed {
			state = "Managed"
		}
		return fmt.Sprintf("{%s %s}", a.Kind, state)
	case SetDefaultSize:
		return fmt.Sprintf("{%s %s}", a.Kind, a.Size)
	}
	return fmt.Sprintf("{%s %q}", a.Kind, a.Name)
}

func (a Action) fields() string {
	f := a.Fields
	size := f.Size
	if size == "" {
		size = "<omitted>"
	}
	switch a.Version {
	case V1alpha1:
		return fmt.Sprintf("name=%q drink=%q", f.DisplayName, f.Beverage)
	case V1beta1:
		return fmt.Sprintf("name=%q drink=%q size=%s sugar=%d", f.DisplayName, f.Beverage, size, f.SugarCubes)
	}
	return fmt.Sprintf("displayName=%q beverage=%q size=%s sugarCubes=%d extras=[%s]",
		f.DisplayName, f.Beverage, size, f.SugarCubes, strings.Join(f.Extras, ","))
}

// Valid domains. Drink names are few so that names come back; extras never
// repeat a beverage (a CEL rule refuses that).
var (
	drinkNames   = []string{"d0", "d1", "d2", "d3", "d4"}
	displayNames = []string{"Morning tea", "Espresso", "Hot chocolate", "Iced coffee", "Café au lait", "Chai"}
	beverages    = []string{"tea", "coffee", "cocoa", "juice", "water"}
	sizes        = []string{"Small", "Medium", "Large"}
	extras       = []string{"milk", "lemon", "honey", "ice", "mint", "cream", "cinnamon", "vanilla", "caramel", "foam", "syrup", "ginger"}
)

// Generator draws actions from a seed, each applicable in the model's state.
type Generator struct {
	rng  *rand.Rand
	next int
}

// NewGenerator returns a generator for seed.
func NewGenerator(seed uint64) *Generator {
	return &Generator{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Next draws an action applicable in m.
func (g *Generator) Next(m *Model) Action {
	for {
		a := g.draw()
		if a.Kind == EditOperand {
			// One of the operator's keys the ConfigMap holds now.
			var keys []string
			for _, k := range slices.Sorted(maps.Keys(m.ConfigMaps[a.Name])) {
				if IsOperatorKey(k) {
					keys = append(keys, k)
				}
			}
			if len(keys) == 0 {
				continue
			}
			a.Key = g.pick(keys)
		}
		if m.Applicable(a) {
			return a
		}
		if a.Kind == Update || a.Kind == Delete || a.Kind == Recreate {
			// Aim at an existing Drink instead, with its own method.
			if name, ok := g.existing(m); ok {
				a.Name = name
				if a.Kind == Update {
					a.Method = m.Drinks[name].Method
				}
				if m.Applicable(a) {
					return a
				}
			}
		}
	}
}

func (g *Generator) existing(m *Model) (string, bool) {
	names := slices.Sorted(maps.Keys(m.Drinks))
	if len(names) == 0 {
		return "", false
	}
	return names[g.rng.IntN(len(names))], true
}

func (g *Generator) draw() Action {
	a := Action{Name: g.pick(drinkNames)}
	switch r := g.rng.IntN(100); {
	case r < 22:
		a.Kind = Create
	case r < 50:
		a.Kind = Update
	case r < 58:
		a.Kind = Delete
	case r < 64:
		a.Kind = Recreate
	case r < 72:
		a.Kind, a.Value = EditOperand, "edited by hand" // Next picks the key
	case r < 80:
		g.next++
		a.Kind, a.Key, a.Value = AddForeignKey, fmt.Sprintf("note-%d", g.next), g.pick(displayNames)
	case r < 86:
		a.Kind = DeleteOperand
	case r < 93:
		a.Kind, a.Managed = SetManagement, g.rng.IntN(3) > 0
	default:
		a.Kind, a.Size = SetDefaultSize, g.pick(sizes)
	}
	if a.Kind == Create || a.Kind == Update || a.Kind == Recreate {
		a.Version, a.Method = g.pick(Versions), g.pick([]string{ByCreate, ByApply})
		a.Fields = g.fields(a.Version)
	}
	return a
}

// fields draws valid values for a write through version.
func (g *Generator) fields(version string) Fields {
	f := Fields{DisplayName: g.pick(displayNames), Beverage: g.pick(beverages)}
	if version == V1alpha1 {
		return f
	}
	if g.rng.IntN(4) > 0 {
		f.Size = g.pick(sizes)
	}
	f.SugarCubes = int32(g.rng.IntN(11))
	if version == V1 {
		n := g.rng.IntN(11)
		if g.rng.IntN(3) == 0 {
			n = 0
		}
		perm := g.rng.Perm(len(extras))
		for _, i := range perm[:min(n, len(extras))] {
			f.Extras = append(f.Extras, extras[i])
		}
	}
	return f
}

func (g *Generator) pick(from []string) string { return from[g.rng.IntN(len(from))] }

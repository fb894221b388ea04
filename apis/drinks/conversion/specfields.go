package conversion

import (
	"slices"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
)

// specField reads and writes one spec field of the hub by its JSON name,
// the name the table of versions (drinksversions) uses: what a version
// cannot hold is a list of such names, and the webhooks and validation act
// on it through these.
type specField struct {
	copy  func(dst, src *drinksv1.DrinkSpec)
	equal func(a, b *drinksv1.DrinkSpec) bool
}

// specFields has an entry for every field of drinksv1.DrinkSpec (a test
// holds them to the type and to the table).
var specFields = map[string]specField{
	"displayName": {
		copy:  func(dst, src *drinksv1.DrinkSpec) { dst.DisplayName = src.DisplayName },
		equal: func(a, b *drinksv1.DrinkSpec) bool { return a.DisplayName == b.DisplayName },
	},
	"beverage": {
		copy:  func(dst, src *drinksv1.DrinkSpec) { dst.Beverage = src.Beverage },
		equal: func(a, b *drinksv1.DrinkSpec) bool { return a.Beverage == b.Beverage },
	},
	"size": {
		copy:  func(dst, src *drinksv1.DrinkSpec) { dst.Size = src.Size },
		equal: func(a, b *drinksv1.DrinkSpec) bool { return a.Size == b.Size },
	},
	"sugarCubes": {
		copy:  func(dst, src *drinksv1.DrinkSpec) { dst.SugarCubes = src.SugarCubes },
		equal: func(a, b *drinksv1.DrinkSpec) bool { return a.SugarCubes == b.SugarCubes },
	},
	"extras": {
		copy:  func(dst, src *drinksv1.DrinkSpec) { dst.Extras = src.Extras },
		equal: func(a, b *drinksv1.DrinkSpec) bool { return slices.Equal(a.Extras, b.Extras) },
	},
}

// CopySpecFields copies the hub spec fields named in fields (JSON names)
// from src to dst. Slices are shared, not copied.
func CopySpecFields(dst, src *drinksv1.DrinkSpec, fields []string) {
	for _, f := range fields {
		if sf, ok := specFields[f]; ok {
			sf.copy(dst, src)
		}
	}
}

// EqualSpecFields reports whether a and b hold the same values in the hub
// spec fields named in fields; a name the hub does not have is never equal.
func EqualSpecFields(a, b *drinksv1.DrinkSpec, fields []string) bool {
	for _, f := range fields {
		sf, ok := specFields[f]
		if !ok || !sf.equal(a, b) {
			return false
		}
	}
	return true
}

package conversion

import (
	"slices"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
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
	"name": {
		copy:  func(dst, src *drinksv1.DrinkSpec) { dst.Name = src.Name },
		equal: func(a, b *drinksv1.DrinkSpec) bool { return a.Name == b.Name },
	},
	"drink": {
		copy:  func(dst, src *drinksv1.DrinkSpec) { dst.Drink = src.Drink },
		equal: func(a, b *drinksv1.DrinkSpec) bool { return a.Drink == b.Drink },
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

// stringField points at the hub's string field f of s (by JSON name); nil
// for a name that is not one.
func stringField(s *drinksv1.DrinkSpec, f string) *string {
	switch f {
	case "displayName":
		return &s.DisplayName
	case "beverage":
		return &s.Beverage
	case "name":
		return &s.Name
	case "drink":
		return &s.Drink
	}
	return nil
}

// AgreeCourseFields makes each course field of the hub of t (empty: the
// Drink API as built) that d sets hold the same value as the field it
// stands for, old being the stored spec on update (nil on create):
//
//   - a course field alone fills its field (the course's Drink as written);
//   - of two that differ, the one this write changed wins when the other
//     is as stored (an update that edits one form, as a client of the
//     course's manifests or of v1's own names does);
//   - two that differ otherwise (both written now, differently) are left
//     for validation to refuse, naming both.
//
// It is idempotent, as defaulting must be.
func AgreeCourseFields(t drinksversions.Table, d, old *drinksv1.DrinkSpec) {
	for c, f := range t.OrDrinks().Hub().Course {
		cp, fp := stringField(d, c), stringField(d, f)
		if cp == nil || fp == nil || *cp == "" || *cp == *fp {
			continue
		}
		if *fp == "" {
			*fp = *cp
			continue
		}
		if old == nil {
			continue
		}
		courseKept, fieldKept := *cp == *stringField(old, c), *fp == *stringField(old, f)
		switch {
		case !courseKept && fieldKept:
			*fp = *cp
		case courseKept && !fieldKept:
			*cp = *fp
		}
	}
}

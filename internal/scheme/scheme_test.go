package scheme_test

import (
	"testing"

	"github.com/example/myoperator/apis/drinks"
	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
	"github.com/example/myoperator/internal/scheme"
)

// The scheme holds every Drink version there is a Go type of, and every
// served one. That it takes them from apis/drinks' list, which
// TestFourthGoVersion extends, is what internal/scheme/scheme.go shows: it
// names no version; hack/check-deps.sh refuses an import of a spoke here.
func TestNewHoldsEveryDrinkVersion(t *testing.T) {
	s := scheme.New()
	for _, names := range [][]string{drinks.Default.Names(), drinksversions.Drinks.Served()} {
		for _, v := range names {
			gvk := drinksv1.GroupVersion.WithKind("Drink").GroupKind().WithVersion(v)
			if !s.Recognizes(gvk) {
				t.Errorf("the scheme lacks %s", gvk)
			}
		}
	}
}

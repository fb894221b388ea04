package reconcile

import (
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
)

// layoutKeys are the data keys of the layout named layout in t, sorted;
// none for a name without one.
func layoutKeys(t drinksversions.Table, layout string) []string {
	return drinksversions.LayoutKeys(t.Layout(layout))
}

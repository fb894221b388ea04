package webhook

import (
	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
)

// NewDrinkWebhookIn is a DrinkWebhook with the table of versions t, in
// place of drinksversions.Drinks (a fourth version).
func NewDrinkWebhookIn(t drinksversions.Table) *DrinkWebhook { return &DrinkWebhook{versions: t} }

// DefaultDrink is DefaultDrinkIn with the built-in table of versions.
func DefaultDrink(d, old *drinksv1.Drink, requestVersion string, defaultSize func() drinksv1.Size) {
	DefaultDrinkIn(drinksversions.Drinks, d, old, requestVersion, defaultSize)
}

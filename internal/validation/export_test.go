package validation

import (
	"context"

	"k8s.io/apimachinery/pkg/util/validation/field"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
)

// The tests' short forms of the validator with the built-in table.

// ValidateDrink checks a Drink (in its hub form) against the rules its CRD
// cannot say; ValidateDrinkHub adds the CRD's rules and ratcheting.
func ValidateDrink(d *drinksv1.Drink) field.ErrorList { return DrinkValidator{}.Validate(d) }

// Validate is ValidateDrink against v's table.
func (v DrinkValidator) Validate(d *drinksv1.Drink) field.ErrorList { return v.validateRules(nil, d) }

func ValidateDrinkHub(ctx context.Context, old, d *drinksv1.Drink, requestVersion string) field.ErrorList {
	return DrinkValidator{}.ValidateHub(ctx, old, d, requestVersion)
}

func DrinkWarnings(requestVersion string) []string { return DrinkValidator{}.Warnings(requestVersion) }

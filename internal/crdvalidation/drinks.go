package crdvalidation

import (
	_ "embed" // the Drink CRD, copied from config/crd/bases by make manifests
	"sync"

	drinksversions "github.com/example/myoperator/apis/drinks/versions"
)

// drinksCRD is config/crd/bases/example.com_drinks.yaml; make manifests
// writes this copy and make verify fails when it drifts.
//
//go:embed example.com_drinks.yaml
var drinksCRD []byte

// DrinkHub returns the validator of the Drink hub version (the storage
// version of drinksversions.Drinks), built once.
var DrinkHub = sync.OnceValues(func() (*Validator, error) { return New(drinksCRD, drinksversions.Drinks.Hub().Name) })

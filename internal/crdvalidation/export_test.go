package crdvalidation

// DrinksCRD returns the generated Drink CRD that the binary was built with.
func DrinksCRD() []byte { return drinksCRD }

// Package drinks is the one entry point to the Drink's Go versions: it adds
// every version to a scheme, builds the conversion webhook's converter, and
// converts a Drink between any two versions. Code outside apis/drinks goes
// through it rather than naming v1alpha1 or v1beta1, so that a version added
// or retired changes only apis/drinks (make verify checks the imports).
package drinks

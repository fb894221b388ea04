// Package conversion converts Drinks between the spoke versions (v1alpha1,
// v1beta1) and the v1 hub without losing anything: what a spoke cannot hold
// travels in the example.com/conversion-data annotation and is restored on
// the way back to the hub. The table of versions (apis/drinks/versions)
// says which fields a spoke lacks and what it names the others.
package conversion

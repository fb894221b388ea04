// Package drinkgamma is a fourth Drink version, v1gamma1, that exists only in
// tests: its Go type and conversion (a GoVersion for apis/drinks) and its row
// of the table of versions. The fourth-version tests add it to the built-in
// lists to show that a new version needs nothing outside apis/drinks: the
// scheme, conversion, the webhooks, validation, the reconciler's layout and
// the plugin's convert take it from those two lists.
package drinkgamma

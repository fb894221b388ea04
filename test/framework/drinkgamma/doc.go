// Package drinkgamma is a fourth Drink version, v1gamma1, that exists only in
// tests: its Go type and conversion (a GoVersion for apis/drinks) and its row
// of the table of versions. apis/drinks' and the plugin's fourth-version
// tests add it to the built-in lists to show that the scheme, conversion and
// the plugin's convert take a new version from them; the webhooks',
// validation's and the reconciler's fourth-version tests add a table row of
// the same shape.
package drinkgamma

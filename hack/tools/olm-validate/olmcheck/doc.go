// Package olmcheck runs the OLM bundle validators of
// github.com/operator-framework/api (the library behind `operator-sdk
// bundle validate`) over a bundle directory, and builds the upgrade graph
// that the bundles' replaces and skipRange fields form.
package olmcheck

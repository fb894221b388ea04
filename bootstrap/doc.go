// Package bootstrap is the logic of the initContainer: an ordered list of
// steps that wait for the OperatorConfig CRD and create the default
// OperatorConfig when it is absent, never touching an existing one.
package bootstrap

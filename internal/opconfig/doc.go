// Package opconfig resolves the configuration the operator runs with from
// the OperatorConfig "cluster": the spec with every default filled in, or the
// built-in defaults when the object is missing or invalid, so that the
// operator never stops for want of configuration.
package opconfig

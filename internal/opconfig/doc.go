// Package opconfig decides the configuration the operator runs with, from the
// OperatorConfig "cluster" and the record of the last configuration the
// operator accepted (kept in a ConfigMap in its own namespace, so that it
// survives restarts). A missing or invalid OperatorConfig never changes what
// the operator does: it keeps running on the accepted configuration, and a
// recreated OperatorConfig never moves operands by itself.
package opconfig

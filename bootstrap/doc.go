// Package bootstrap is the logic of the initContainer: an ordered list of
// steps that wait for the OperatorConfig CRD, remove from the spec the
// defaults an earlier release wrote there, and create the default
// OperatorConfig when it is absent. The manager's leader runs the removal
// once more when it starts leading (LeaderRelease), after the earlier
// release's pods that could write the defaults back have gone.
package bootstrap

// Package olmbundle generates the OLM bundle (ClusterServiceVersion, CRDs,
// metadata) from the kustomize manifests under config/, so that the bundle
// never drifts from what `kubectl apply -k config/default` installs.
package olmbundle

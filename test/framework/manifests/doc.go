// Package manifests reads the operator's kustomize output (config/default
// and its parts) as objects, for the tests that check the manifests against
// a real API server and for the OLM bundle generator.
package manifests

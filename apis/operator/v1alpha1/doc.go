// Package v1alpha1 holds the OperatorConfig API: the cluster-wide singleton
// that configures the running operator.
//
// +kubebuilder:object:generate=true
// +groupName=operator.example.com
package v1alpha1

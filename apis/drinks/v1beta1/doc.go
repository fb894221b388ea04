// Package v1beta1 holds the v1beta1 Drink API, a spoke that converts through
// the v1 hub.
//
// +kubebuilder:object:generate=true
// +groupName=example.com
package v1beta1

// Package v1alpha1 holds the original course's Drink API, still served but
// deprecated in favour of v1. It converts through the v1 hub.
//
// +kubebuilder:object:generate=true
// +groupName=example.com
package v1alpha1

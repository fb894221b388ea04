// Package v1alpha1 holds the operator's first Drink API, in the course's
// form (spec.name, spec.drink), still served but deprecated in favour of v1.
// (The course's own Drink is example.com/v1 with those fields, which v1
// accepts: config/samples/course/.) It converts through the v1 hub.
//
// +kubebuilder:object:generate=true
// +groupName=example.com
package v1alpha1

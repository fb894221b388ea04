// Package v1 holds the Guestbook API of the Kubebuilder quick start: an
// active/standby application run by the operator.
//
// +kubebuilder:object:generate=true
// +groupName=webapp.my.domain
package v1

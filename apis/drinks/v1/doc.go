// Package v1 holds the v1 Drink API: the hub of conversion and the version
// stored in etcd. Every other Drink version converts to and from this one.
//
// +kubebuilder:object:generate=true
// +groupName=example.com
package v1

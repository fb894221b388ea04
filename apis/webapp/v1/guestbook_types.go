package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// ConditionReady is true when the StatefulSet runs the current spec and
	// exactly one Ready pod is active.
	ConditionReady = "Ready"

	// RoleLabel marks each Guestbook pod as RoleActive or RoleStandby.
	RoleLabel = "webapp.my.domain/role"
	// RoleActive is the RoleLabel value of the one pod that takes traffic.
	RoleActive = "active"
	// RoleStandby is the RoleLabel value of the pods waiting to take over.
	RoleStandby = "standby"

	// MountLabel is the label that lets a Guestbook's pods mount a
	// ConfigMap of the operand namespace that the operator did not create:
	// set to that Guestbook's name by whoever may write ConfigMaps there,
	// not by whoever may create a Guestbook, whose page would otherwise
	// show any ConfigMap of the namespace.
	MountLabel = "webapp.my.domain/guestbook"
)

// Alias selects the default content of the Guestbook's ConfigMap.
// +kubebuilder:validation:Enum=Phone;Address;Name
type Alias string

const (
	// AliasPhone fills the ConfigMap with a phone book entry.
	AliasPhone Alias = "Phone"
	// AliasAddress fills the ConfigMap with an address book entry.
	AliasAddress Alias = "Address"
	// AliasName fills the ConfigMap with a name entry.
	AliasName Alias = "Name"
)

// GuestbookSpec is the Guestbook application a user wants.
type GuestbookSpec struct {
	// Size is the number of Guestbook pods, from 1 to 10: one active, the
	// others standby.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	Size int32 `json:"size,omitempty"`

	// ConfigMapName is the ConfigMap, in the operand namespace, that the pods
	// mount. The operator creates it with defaults from alias when it is
	// absent and never overwrites it once it exists. One the operator did
	// not create is mounted only when labelled webapp.my.domain/guestbook
	// with this Guestbook's name. 1 to 15 characters, a DNS label.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	ConfigMapName string `json:"configMapName,omitempty"`

	// Alias chooses the default ConfigMap content: Phone, Address or Name.
	// +optional
	Alias Alias `json:"alias,omitempty"`
}

// GuestbookStatus is what the operator observed and did.
type GuestbookStatus struct {
	// Active is the name of the pod that carries the active role.
	// +optional
	Active string `json:"active,omitempty"`

	// Standby are the names of the pods that carry the standby role, sorted.
	// +optional
	// +listType=atomic
	Standby []string `json:"standby,omitempty"`

	// OperandNamespace is the namespace the Guestbook's operands run in.
	// When the OperatorConfig moves them, it names the old namespace until
	// the operands there are deleted, which happens only once the new ones
	// are Ready.
	// +optional
	OperandNamespace string `json:"operandNamespace,omitempty"`

	// ObservedGeneration is the generation of the spec that the status
	// describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions describe the Guestbook now; Ready is true when it runs the
	// current spec with one active pod.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Guestbook is an active/standby application run by the operator.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=gb,categories=myoperator
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.size`
// +kubebuilder:printcolumn:name="Operands",type=string,JSONPath=`.status.operandNamespace`
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.status.active`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="Why Ready is what it is"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1,description="The Ready condition's message"
type Guestbook struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the application wanted.
	// +required
	Spec GuestbookSpec `json:"spec,omitzero"`
	// Status is what the operator observed.
	// +optional
	Status GuestbookStatus `json:"status,omitempty"`
}

// GuestbookList is a list of Guestbooks.
// +kubebuilder:object:root=true
type GuestbookList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Guestbooks.
	Items []Guestbook `json:"items"`
}

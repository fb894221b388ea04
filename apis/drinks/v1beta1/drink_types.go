package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Size is the size of a drink.
// +kubebuilder:validation:Enum=Small;Medium;Large
type Size string

// DrinkSpec is the drink a user orders.
type DrinkSpec struct {
	// Name is the human-readable name of the drink (displayName in v1).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule=`!self.matches(r'^[\p{Z}\p{Cc}\p{Cf}]*$')`,message="name must not be blank: it needs a visible character, not only spaces, control or invisible format characters"
	Name string `json:"name,omitempty"`

	// Drink is what is in the cup (beverage in v1).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule=`!self.matches(r'^[\p{Z}\p{Cc}\p{Cf}]*$')`,message="drink must not be blank: it needs a visible character, not only spaces, control or invisible format characters"
	Drink string `json:"drink,omitempty"`

	// Size of the drink: Small, Medium or Large. When omitted, the mutating
	// webhook sets the default size of the OperatorConfig.
	// +optional
	Size Size `json:"size,omitempty"`

	// Sugar is the number of sugar cubes, from 0 to 10 (sugarCubes in v1).
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	Sugar int32 `json:"sugar,omitempty"`
}

// DrinkStatus is what the operator observed and did.
type DrinkStatus struct {
	// ObservedGeneration is the generation of the spec that the status
	// describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions describe the Drink now; Ready is true when its ConfigMap
	// matches the current spec.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ConfigMapName is the name of the ConfigMap rendered for this Drink.
	// +optional
	ConfigMapName string `json:"configMapName,omitempty"`

	// AuthoredVersion is the API version in which the spec was last
	// written; it decides the layout of the ConfigMap.
	// +optional
	AuthoredVersion string `json:"authoredVersion,omitempty"`
}

// Drink is a drink order that the operator renders into a ConfigMap.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=dr,categories=myoperator
// +kubebuilder:printcolumn:name="Drink",type=string,JSONPath=`.spec.drink`
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.spec.size`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.authoredVersion`,description="API version the spec was last written in; it decides the ConfigMap layout"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="Why Ready is what it is"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="ConfigMap",type=string,JSONPath=`.status.configMapName`,priority=1,description="The ConfigMap rendered for this Drink"
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1,description="The Ready condition's message"
type Drink struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the drink ordered.
	// +required
	Spec DrinkSpec `json:"spec,omitzero"`
	// Status is what the operator observed.
	// +optional
	Status DrinkStatus `json:"status,omitempty"`
}

// DrinkList is a list of Drinks.
// +kubebuilder:object:root=true
type DrinkList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Drinks.
	Items []Drink `json:"items"`
}

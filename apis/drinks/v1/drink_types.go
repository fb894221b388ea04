package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// AuthoredVersionAnnotation records the API version of the request that
	// last wrote a Drink's spec. The mutating webhook sets it from the
	// admission request, so it is known, never guessed; the reconciler copies
	// it to status.authoredVersion and chooses the ConfigMap layout from it.
	AuthoredVersionAnnotation = "example.com/authored-version"

	// ConversionDataAnnotation holds, on an object served in an older
	// version, the fields that version cannot express. Conversion back to v1
	// restores them, so a round trip through any version loses nothing.
	ConversionDataAnnotation = "example.com/conversion-data"

	// ConditionReady is true when the Drink's ConfigMap matches the current
	// generation of its spec.
	ConditionReady = "Ready"
)

// Size is the size of a drink.
// +kubebuilder:validation:Enum=Small;Medium;Large
type Size string

const (
	// SizeSmall is a small drink.
	SizeSmall Size = "Small"
	// SizeMedium is a medium drink.
	SizeMedium Size = "Medium"
	// SizeLarge is a large drink.
	SizeLarge Size = "Large"
)

// DrinkSpec is the drink a user orders.
//
// name and drink are the original course's names of displayName and
// beverage: the course's own example.com/v1 Drink sets them, and v1 holds
// them so that its manifests apply unchanged and a cluster that ran the
// course's operator keeps them (a schema without them would prune them on
// every read). The mutating webhook fills displayName and beverage from
// them and keeps each pair equal; a pair written with two different values
// is refused, naming both fields.
// +kubebuilder:validation:XValidation:rule="!has(self.extras) || !self.extras.exists(e, e == self.beverage)",message="extras must not repeat the beverage",fieldPath=".extras"
// +kubebuilder:validation:XValidation:rule="has(self.displayName) || has(self.name)",message="displayName is required (or name, the course's name of it)",fieldPath=".displayName",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule="has(self.beverage) || has(self.drink)",message="beverage is required (or drink, the course's name of it)",fieldPath=".beverage",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule="!has(self.name) || !has(self.displayName) || self.name == self.displayName",message="name and displayName differ: name is the course's name of displayName; write one of them, or both with the same value",fieldPath=".name"
// +kubebuilder:validation:XValidation:rule="!has(self.drink) || !has(self.beverage) || self.drink == self.beverage",message="drink and beverage differ: drink is the course's name of beverage; write one of them, or both with the same value",fieldPath=".drink"
type DrinkSpec struct {
	// DisplayName is the human-readable name of the drink (v1alpha1,
	// v1beta1 and the course call it name). Required, as displayName or as
	// name.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule=`!self.matches(r'^[\p{Z}\p{Cc}\p{Cf}]*$')`,message="displayName must not be blank: it needs a visible character, not only spaces, control or invisible format characters"
	DisplayName string `json:"displayName,omitempty"`

	// Beverage is what is in the cup (v1alpha1, v1beta1 and the course call
	// it drink). Required, as beverage or as drink.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule=`!self.matches(r'^[\p{Z}\p{Cc}\p{Cf}]*$')`,message="beverage must not be blank: it needs a visible character, not only spaces, control or invisible format characters"
	Beverage string `json:"beverage,omitempty"`

	// Name is the course's name of displayName, kept as the course's
	// manifests write it. A Drink that sets name or drink is in the course's
	// form: its ConfigMap holds the course's keys, name and drink.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule=`!self.matches(r'^[\p{Z}\p{Cc}\p{Cf}]*$')`,message="name must not be blank: it needs a visible character, not only spaces, control or invisible format characters"
	Name string `json:"name,omitempty"`

	// Drink is the course's name of beverage, kept as the course's
	// manifests write it.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule=`!self.matches(r'^[\p{Z}\p{Cc}\p{Cf}]*$')`,message="drink must not be blank: it needs a visible character, not only spaces, control or invisible format characters"
	Drink string `json:"drink,omitempty"`

	// Size of the drink: Small, Medium or Large. When omitted, the mutating
	// webhook sets the default size of the OperatorConfig.
	// +optional
	Size Size `json:"size,omitempty"`

	// SugarCubes is the number of sugar cubes, from 0 to 10 (v1beta1 calls
	// it sugar).
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	SugarCubes int32 `json:"sugarCubes,omitempty"`

	// Extras are additions to the drink, each named once, at most 10.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=32
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Extras []string `json:"extras,omitempty"`
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
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=dr,categories=myoperator
// +kubebuilder:printcolumn:name="Beverage",type=string,JSONPath=`.spec.beverage`
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

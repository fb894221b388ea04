package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SingletonName is the only name an OperatorConfig may have.
const SingletonName = "cluster"

// Condition types of the OperatorConfig, after the cluster-operator
// conventions.
const (
	// ConditionAvailable is true when the operator runs with this config.
	ConditionAvailable = "Available"
	// ConditionProgressing is true while a change of config is being applied.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is true when the operator cannot apply the config as
	// written (it then runs on defaults) or a background task failed.
	ConditionDegraded = "Degraded"
)

// ManagementState says whether the operator changes operands.
// +kubebuilder:validation:Enum=Managed;Unmanaged
type ManagementState string

const (
	// Managed means the operator reconciles operands.
	Managed ManagementState = "Managed"
	// Unmanaged means the operator leaves operands alone and says so in status.
	Unmanaged ManagementState = "Unmanaged"
)

// LogLevel is the verbosity of the operator's logs.
// +kubebuilder:validation:Enum=Debug;Info;Error
type LogLevel string

const (
	// LogDebug logs everything, including each reconcile.
	LogDebug LogLevel = "Debug"
	// LogInfo logs what changed.
	LogInfo LogLevel = "Info"
	// LogError logs only errors.
	LogError LogLevel = "Error"
)

// DrinkSize is the size given to Drinks that do not name one.
// +kubebuilder:validation:Enum=Small;Medium;Large
type DrinkSize string

// Built-in defaults, used when a field is omitted and when there is no valid
// OperatorConfig at all.
const (
	DefaultManagementState    = Managed
	DefaultLogLevel           = LogInfo
	DefaultDrinkSize          = DrinkSize("Medium")
	DefaultGuestbookNamespace = "guestbook"
)

// DefaultGuestbookImage is the Guestbook pods' default image. A variable,
// so that a release build stamps the image it ships, by digest, with
// -ldflags -X (hack/dist.sh); the CRD's default says the same.
var DefaultGuestbookImage = "ghcr.io/example/myoperator-guestbook:v1.0.0"

// OperatorConfigSpec is how the operator should behave.
type OperatorConfigSpec struct {
	// ManagementState is Managed (the operator reconciles operands) or
	// Unmanaged (it leaves them alone and says so in status).
	// +optional
	// +kubebuilder:default=Managed
	ManagementState ManagementState `json:"managementState,omitempty"`

	// LogLevel is Debug, Info or Error; applied live, without a restart.
	// +optional
	// +kubebuilder:default=Info
	LogLevel LogLevel `json:"logLevel,omitempty"`

	// Drinks configures the Drink controller.
	// +optional
	// +kubebuilder:default={}
	Drinks DrinksConfig `json:"drinks,omitempty"`

	// Guestbook configures the Guestbook controller.
	// +optional
	// +kubebuilder:default={}
	Guestbook GuestbookConfig `json:"guestbook,omitempty"`
}

// DrinksConfig configures the Drink controller.
type DrinksConfig struct {
	// DefaultSize is given to Drinks created without a size.
	// +optional
	// +kubebuilder:default=Medium
	DefaultSize DrinkSize `json:"defaultSize,omitempty"`
}

// GuestbookConfig configures the Guestbook controller.
type GuestbookConfig struct {
	// Namespace is where Guestbook operands (StatefulSet, Service,
	// ConfigMap) run. A DNS label.
	// +optional
	// +kubebuilder:default=guestbook
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`

	// Image is the container image of the Guestbook pods: by default the
	// guestbook server the operator's project builds. Another image must
	// answer the pods' probes on port 8080: GET /readyz (readiness, which
	// failover follows) and GET /healthz (liveness).
	// +optional
	// +kubebuilder:default="ghcr.io/example/myoperator-guestbook:v1.0.0"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.contains(' ')",message="image must not contain spaces"
	Image string `json:"image,omitempty"`
}

// OperatorConfigStatus is what the operator runs with.
type OperatorConfigStatus struct {
	// ObservedGeneration is the generation of the spec that the status
	// describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Available, Progressing and Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Effective is the configuration the operator runs with: the spec with
	// every default filled in, or the built-in defaults when the spec cannot
	// be used.
	// +optional
	Effective *EffectiveConfig `json:"effective,omitempty"`
}

// EffectiveConfig is the configuration the operator runs with.
type EffectiveConfig struct {
	// ManagementState in effect.
	ManagementState ManagementState `json:"managementState"`
	// LogLevel in effect.
	LogLevel LogLevel `json:"logLevel"`
	// DrinkDefaultSize in effect.
	DrinkDefaultSize DrinkSize `json:"drinkDefaultSize"`
	// GuestbookNamespace in effect.
	GuestbookNamespace string `json:"guestbookNamespace"`
	// GuestbookImage in effect.
	GuestbookImage string `json:"guestbookImage"`
}

// OperatorConfig configures the operator. It is a singleton named cluster.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=myoperator
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'cluster'",message="metadata.name: OperatorConfig is a singleton; the only accepted name is 'cluster'"
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.spec.managementState`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OperatorConfig struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is how the operator should behave; every field has a default.
	// +optional
	// +kubebuilder:default={}
	Spec OperatorConfigSpec `json:"spec,omitempty"`
	// Status is what the operator runs with.
	// +optional
	Status OperatorConfigStatus `json:"status,omitempty"`
}

// OperatorConfigList is a list of OperatorConfigs.
// +kubebuilder:object:root=true
type OperatorConfigList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the OperatorConfigs.
	Items []OperatorConfig `json:"items"`
}

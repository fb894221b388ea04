package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SingletonName is the only name an OperatorConfig may have.
const SingletonName = "cluster"

// Condition types of the OperatorConfig, after the cluster-operator
// conventions.
const (
	// ConditionReady is true when the operator runs with this config as
	// written: Available and not Degraded (kubectl wait
	// --for=condition=Ready operatorconfig/cluster).
	ConditionReady = "Ready"
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
// -ldflags -X (hack/dist.sh); the manager's --guestbook-image (from the
// GUESTBOOK_IMAGE its Deployment sets, which a release's manifests name by
// digest in the registry they were pushed to) replaces it at start.
var DefaultGuestbookImage = "ghcr.io/example/myoperator-guestbook:v1.0.0"

// OperatorConfigSpec is how the operator should behave: only what a user
// chose. Every field is optional and has no schema default, so that an
// omitted field follows the default of the release that runs (a default
// written into the spec would stay behind when a release changes it). The
// operator computes the value in effect, and says where it came from, in
// status.effective.
type OperatorConfigSpec struct {
	// ManagementState is Managed (the operator reconciles operands) or
	// Unmanaged (it leaves them alone and says so in status). Default:
	// Managed. In effect: status.effective.managementState.
	// +optional
	ManagementState ManagementState `json:"managementState,omitempty"`

	// LogLevel is Debug, Info or Error; applied live, without a restart.
	// Default: Info. In effect: status.effective.logLevel.
	// +optional
	LogLevel LogLevel `json:"logLevel,omitempty"`

	// Drinks configures the Drink controller.
	// +optional
	Drinks DrinksConfig `json:"drinks,omitempty"`

	// Guestbook configures the Guestbook controller.
	// +optional
	Guestbook GuestbookConfig `json:"guestbook,omitempty"`
}

// DrinksConfig configures the Drink controller.
type DrinksConfig struct {
	// DefaultSize is given to Drinks created without a size. Default:
	// Medium. In effect: status.effective.drinkDefaultSize.
	// +optional
	DefaultSize DrinkSize `json:"defaultSize,omitempty"`
}

// GuestbookConfig configures the Guestbook controller.
type GuestbookConfig struct {
	// Namespace is where Guestbook operands (StatefulSet, Service,
	// ConfigMap) run. A DNS label. Default: guestbook. In effect:
	// status.effective.guestbookNamespace.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`

	// Image is the container image of the Guestbook pods. Default: the
	// Guestbook server image of the running release (the manager's
	// --guestbook-image, which a release names by digest). Another image
	// must answer the pods' probes on port 8080: GET /readyz (readiness,
	// which failover follows) and GET /healthz (liveness). In effect:
	// status.effective.guestbookImage.
	// +optional
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

	// Conditions: Ready, Available, Progressing and Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Effective is the configuration the operator runs with: each value of
	// the spec, or the running release's default where the spec has none,
	// or the last accepted configuration's where the spec cannot be used;
	// Sources says which, value by value.
	// +optional
	Effective *EffectiveConfig `json:"effective,omitempty"`
}

// Source says where an effective value comes from.
// +kubebuilder:validation:Enum=default;user;kept
type Source string

const (
	// SourceDefault means the spec leaves the field out: the running
	// release's default is in effect, and follows the release on upgrade.
	SourceDefault Source = "default"
	// SourceUser means the spec's value is in effect.
	SourceUser Source = "user"
	// SourceKept means the spec's value is not in effect (the spec is
	// invalid, or the OperatorConfig was recreated and the field moves
	// operands): the value the operator accepted last stays in force.
	SourceKept Source = "kept"
)

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
	// Sources says where each value above comes from.
	// +optional
	Sources EffectiveSources `json:"sources,omitzero"`
	// Customized lists the spec fields whose value in effect differs from
	// the running release's default, for kubectl get; empty when every
	// value is the default.
	// +optional
	// +listType=atomic
	Customized []string `json:"customized,omitempty"`
}

// EffectiveSources says where each value of an EffectiveConfig comes from.
type EffectiveSources struct {
	// ManagementState's source.
	// +optional
	ManagementState Source `json:"managementState,omitempty"`
	// LogLevel's source.
	// +optional
	LogLevel Source `json:"logLevel,omitempty"`
	// DrinkDefaultSize's source (spec.drinks.defaultSize).
	// +optional
	DrinkDefaultSize Source `json:"drinkDefaultSize,omitempty"`
	// GuestbookNamespace's source (spec.guestbook.namespace).
	// +optional
	GuestbookNamespace Source `json:"guestbookNamespace,omitempty"`
	// GuestbookImage's source (spec.guestbook.image).
	// +optional
	GuestbookImage Source `json:"guestbookImage,omitempty"`
}

// OperatorConfig configures the operator. It is a singleton named cluster.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=myoperator,shortName=opc
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'cluster'",message="metadata.name: OperatorConfig is a singleton; the only accepted name is 'cluster'"
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.effective.managementState`,description="Management state in effect"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Customized",type=string,JSONPath=`.status.effective.customized`,description="Fields whose value in effect is not the release's default"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OperatorConfig struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what users chose; an omitted field follows the running
	// release's default. The values in effect are in status.effective.
	// +optional
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

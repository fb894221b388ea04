package v1

import (
	corev1 "k8s.io/api/core/v1"
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

	// OperandNamespaceLabel marks, set to "true" on a namespace by an
	// admin, a namespace Guestbooks' operands may run in: the admission
	// policy on the operator's own writes
	// (config/admission-policy/operator-writes.yaml) lets it create a
	// Guestbook's ConfigMap only in such a namespace. The operator may
	// only read namespaces, so whoever takes its pod cannot mark one.
	OperandNamespaceLabel = "webapp.my.domain/operands"

	// NameLabel is AppName on every Guestbook pod; with InstanceLabel it
	// selects one Guestbook's pods.
	NameLabel = "app.kubernetes.io/name"
	// InstanceLabel is the name of the Guestbook a pod belongs to.
	InstanceLabel = "app.kubernetes.io/instance"
	// AppName is the NameLabel value of every Guestbook pod.
	AppName = "guestbook"

	// HostnameTopologyKey is the node label the default pod anti-affinity
	// spreads a Guestbook's pods over: one pod per node when it can.
	HostnameTopologyKey = "kubernetes.io/hostname"
)

// PodSelector is the label selector of the pods of the Guestbook name, the
// one its StatefulSet and its pod anti-affinity use.
func PodSelector(name string) map[string]string {
	return map[string]string{NameLabel: AppName, InstanceLabel: name}
}

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

// AntiAffinity says how strictly a Guestbook's pods keep off each other's
// nodes.
// +kubebuilder:validation:Enum=Soft;Hard
type AntiAffinity string

const (
	// AntiAffinitySoft asks the scheduler to put the pods on different
	// nodes when it can (preferredDuringSchedulingIgnoredDuringExecution,
	// weight 100), and to put them together rather than leave one Pending.
	AntiAffinitySoft AntiAffinity = "Soft"
	// AntiAffinityHard requires different nodes
	// (requiredDuringSchedulingIgnoredDuringExecution): with fewer fitting
	// nodes than pods, the extra pods stay Pending.
	AntiAffinityHard AntiAffinity = "Hard"
)

// Bounds of spec.pod that its schema cannot say, on the Kubernetes types
// inside spec.pod.affinity and spec.pod.resources: the webhook enforces
// them, so that one Guestbook stays a small object. (The schema bounds
// nodeSelector, tolerations and imagePullSecrets.)
const (
	// MaxAffinityTerms bounds each list of affinity terms.
	MaxAffinityTerms = 16
	// MaxSelectorRequirements bounds the requirements (and match labels)
	// of each selector in an affinity term.
	MaxSelectorRequirements = 16
	// MaxSelectorValues bounds the values of each requirement, and the
	// namespaces of a pod affinity term.
	MaxSelectorValues = 64
	// MaxResources bounds the entries of requests and of limits.
	MaxResources = 16
)

// GuestbookPod are settings of the Guestbook's pods: where they may run,
// what they ask for, and how they keep apart. Every field is optional.
type GuestbookPod struct {
	// Resources are the guestbook container's requests and limits. When
	// omitted, the operator's defaults apply: requests cpu 10m and memory
	// 16Mi, limit memory 64Mi. When set, they replace the defaults as a
	// whole (a resources of {} asks for nothing and limits nothing). A
	// request may not exceed its limit; claims are not supported.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// NodeSelector is the pods' node selector: label keys and values a node
	// must carry. At most 32 entries.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations let the pods run on nodes with matching taints. At most
	// 32.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Affinity is merged with the operator's pod anti-affinity (see
	// antiAffinity): nodeAffinity and podAffinity are the pods' as written;
	// the operator's anti-affinity term comes first in podAntiAffinity's
	// list of its kind (preferred for Soft, required for Hard) and the
	// terms written here follow it, in their order. Each list of terms
	// holds at most 16, each selector at most 16 requirements of at most
	// 64 values. A required podAffinity term that puts the Guestbook's own
	// pods on one node (topologyKey kubernetes.io/hostname) is refused
	// with antiAffinity Hard and a size above 1: no node could take the
	// second pod.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// AntiAffinity says how the pods keep off each other's nodes (topology
	// key kubernetes.io/hostname, selecting the Guestbook's own pods):
	// Soft (the default when omitted) prefers one pod per node and still
	// schedules every pod on fewer nodes; Hard requires it, and leaves the
	// pods beyond the number of fitting nodes Pending. An active pod and
	// its standby on different nodes survive the loss of one node.
	// +optional
	AntiAffinity AntiAffinity `json:"antiAffinity,omitempty"`

	// PriorityClassName is the pods' PriorityClass, a DNS subdomain.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// ImagePullSecrets name Secrets of the operand namespace that the
	// kubelet pulls the image with. At most 16.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
}

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

	// Pod holds settings of the Guestbook's pods: resources, node
	// selection, tolerations, affinity, priority, image pull secrets and
	// how strictly the pods keep apart. The operator applies them to the
	// pod template and restores them when another writer changes it.
	// +optional
	Pod *GuestbookPod `json:"pod,omitempty"`
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

package names

// The install: where the operator runs and what its objects are called.
// config/ declares the same names; a renamed object there must be renamed
// here too (the envtest suites and e2e read both).
const (
	// AppName is the operator's name: the value of NameLabel and
	// ManagedByLabel on what it installs and writes.
	AppName = "myoperator"
	// Namespace is the namespace config/default installs the operator in;
	// the manager's default when POD_NAMESPACE is unset.
	Namespace = "myoperator-system"
	// Deployment is the manager's Deployment, and ServiceAccount the
	// account it runs as (config/manager, config/rbac).
	Deployment     = "myoperator-controller-manager"
	ServiceAccount = "myoperator-controller-manager"
	// LeaderElectionID names the leader's Lease in Namespace; the optional
	// leader fence takes it as its parameter (config/leader-fence).
	LeaderElectionID = "myoperator.example.com"
	// CertSecret holds the webhook serving certificate.
	CertSecret = "myoperator-webhook-server-cert"
	// CAConfigMap publishes the CA of CertSecret's certificate, without
	// the keys the Secret holds, for Prometheus to verify the metrics
	// endpoint with (config/prometheus/monitor.yaml).
	CAConfigMap = "myoperator-webhook-ca"
	// WebhookService and MetricsService are the Services the serving
	// certificate is valid for.
	WebhookService = "myoperator-webhook-service"
	MetricsService = "myoperator-metrics-service"
	// MutatingWebhookConfig and ValidatingWebhookConfig are the admission
	// webhook configurations whose CA bundle the manager keeps;
	// ShardFenceWebhookConfig is the sharding fence's (config/sharding).
	MutatingWebhookConfig   = "myoperator-mutating-webhook-configuration"
	ValidatingWebhookConfig = "myoperator-validating-webhook-configuration"
	ShardFenceWebhookConfig = "myoperator-shard-fence"
)

// The ValidatingAdmissionPolicies of config/admission-policy that narrow
// what the operator's ServiceAccount may write, each bound under its own
// name: an install without them (OLM's bundle cannot carry them) leaves
// the ServiceAccount its RBAC rights alone.
const (
	ConfigMapsPolicy  = "myoperator-operator-configmaps"
	CAInjectionPolicy = "myoperator-operator-ca-injection"
	RecordPolicy      = "myoperator-accepted-config-record"
)

// The CustomResourceDefinitions the operator serves; it registers none of
// them, and writes only DrinkCRD's conversion CA bundle.
const (
	DrinkCRD          = "drinks.example.com"
	GuestbookCRD      = "guestbooks.webapp.my.domain"
	OperatorConfigCRD = "operatorconfigs.operator.example.com"
)

// Labels and annotations the operator sets and selects by. A changed key or
// value would orphan what an earlier release wrote under the old one (the
// cache's label selectors, the Drinks' ConfigMaps), so they never change.
const (
	// NameLabel carries AppName on the objects the operator installs or
	// creates for itself (its pods, Leases).
	NameLabel = "app.kubernetes.io/name"
	// ManagedByLabel marks what the operator writes, with ManagedByValue;
	// its caches of ConfigMaps and Pods hold only objects with this label,
	// so every one it must read back carries it.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = AppName
	// DrinkLabel names the Drink a ConfigMap belongs to.
	DrinkLabel = "example.com/drink"
	// LayoutAnnotation records the layout a Drink's ConfigMap was written
	// in, so that a layout change is seen without reading managedFields.
	LayoutAnnotation = "example.com/layout"
)

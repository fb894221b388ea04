package app

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/bootstrap"
	"github.com/example/myoperator/internal/certs"
	"github.com/example/myoperator/internal/leaderlock"
	"github.com/example/myoperator/internal/migrate"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/internal/opconfig"
	"github.com/example/myoperator/internal/operandcache"
	"github.com/example/myoperator/internal/readbytes"
	"github.com/example/myoperator/internal/scheme"
	"github.com/example/myoperator/internal/shard"
	"github.com/example/myoperator/internal/webhook"
	"github.com/example/myoperator/internal/webhookdrain"
	"github.com/example/myoperator/internal/webhookguard"
	"github.com/example/myoperator/internal/writecount"
	"github.com/example/myoperator/reconcile"
)

var managedBy = labels.SelectorFromSet(labels.Set{names.ManagedByLabel: names.ManagedByValue})

// keepManagedFields is a cache transform that changes nothing: it stands
// in for the default transform, which strips managed fields.
func keepManagedFields(obj any) (any, error) { return obj, nil }

// operandCacheOptions configure the cache of each Guestbook operand
// namespace: the operator's rights on pods, StatefulSets, Services and
// NetworkPolicies exist only there (a RoleBinding per namespace), so it
// never watches them cluster-wide.
func operandCacheOptions(mgr ctrl.Manager) cache.Options {
	return cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			// Only the pods of the operator's StatefulSets.
			&corev1.Pod{}: {Label: managedBy},
			// The Guestbooks' ConfigMaps, watched here rather than in the
			// manager's cache: with --watch-namespaces that cache holds only
			// the served namespaces, and the operand namespace need not be
			// one of them.
			&corev1.ConfigMap{}: {Label: managedBy, Transform: reconcile.TrimConfigMap},
			// The Guestbook reconciler reads their managed fields to see
			// which fields of its StatefulSets and Services another writer
			// took over (a scale, a selector edit), so these few objects
			// keep them; its NetworkPolicies too (a port added to them).
			&appsv1.StatefulSet{}:         {Transform: keepManagedFields},
			&corev1.Service{}:             {Transform: keepManagedFields},
			&networkingv1.NetworkPolicy{}: {Transform: keepManagedFields},
		},
	}
}

// The certificate rotator and the migration need these; writes are limited
// to the project's own objects by name.
// The certificate Secret by name. The rotator (cert-controller) watches
// every Secret of the namespace through a cache of its own, which it does
// not let anyone narrow, so list and watch stay namespace-wide here;
// config/certmanager, where the rotator does not run and cert-manager keeps
// its CA key in this namespace, narrows them to the name too (the manager's
// own cache selects the Secret by a metadata.name field selector, which
// RBAC authorizes against resourceNames).
// +kubebuilder:rbac:groups="",namespace=myoperator-system,resources=secrets,verbs=get;update;patch,resourceNames=myoperator-webhook-server-cert
// +kubebuilder:rbac:groups="",namespace=myoperator-system,resources=secrets,verbs=list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=update;patch,resourceNames=myoperator-mutating-webhook-configuration;myoperator-validating-webhook-configuration;myoperator-shard-fence
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=update;patch,resourceNames=drinks.example.com
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions/status,verbs=update;patch,resourceNames=drinks.example.com
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=myoperator-system,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Options configure the manager.
type Options struct {
	// Namespace the operator runs in: its certificate Secret and Lease.
	Namespace string

	MetricsAddr string
	// SecureMetrics serves metrics over HTTPS to callers that the API
	// server authenticates and authorizes (get on /metrics).
	SecureMetrics bool
	ProbeAddr     string

	// EnableHTTP2 lets the webhook and secure metrics servers negotiate
	// HTTP/2 (--enable-http2, on by default). Over HTTP/1.1 the API
	// server keeps at most 25 idle connections to a webhook host and
	// opens a new one, with a full TLS handshake, for every call beyond
	// them: with four replicas behind the fence at 50,000 Drinks that
	// was about a third of the replicas' CPU, and convergence took
	// 1,077 s against 739 s over HTTP/2 (test/bench/results/HISTORY.md).
	// The reason starters turn it off, HTTP/2 rapid reset
	// (CVE-2023-44487), is mended in the Go server this is built with:
	// it runs at most MaxConcurrentStreams handlers per connection,
	// those of reset streams included, and closes a connection whose
	// queue of waiting requests grows too long.
	EnableHTTP2 bool

	WebhookHost string
	WebhookPort int
	CertDir     string
	// Conversion bounds each conversion request (zero: the defaults).
	Conversion webhook.ConversionLimits
	// WebhookLimits bound every webhook endpoint together: requests in
	// flight, bytes held, read and write time (zero fields: the defaults;
	// main sizes BufferBytes from the container's memory limit).
	WebhookLimits webhookguard.Limits

	// Certs configures the operator's own certificate management; nil
	// leaves certificates to someone else (cert-manager, OLM, envtest).
	Certs *CertOptions
	// IssuedCertSecret, with Certs nil, names the Secret in Namespace where
	// someone else (cert-manager) keeps the serving certificate: the
	// manager reads it through the API and serves it from memory, and
	// neither writes it nor injects a CA. Empty serves the files in CertDir
	// (OLM mounts them; envtest writes them).
	IssuedCertSecret string

	LeaderElection bool
	// PodName is the manager's pod (POD_NAME, from the downward API). When
	// set, the Lease holder identity is <PodName>_<uuid> rather than
	// controller-runtime's <hostname>_<uuid>: the fencing policy
	// (config/leader-fence) admits the leader's writes only when the
	// holder starts with the pod name of the request's bound token, and the
	// hostname is the pod name only when the pod sets no other.
	PodName string
	// LeaseDuration and friends tune leader election; zero uses defaults.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration

	GracefulShutdownTimeout time.Duration

	// WebhookDrainPeriod is how long the webhook server answers with
	// "Connection: close" before it stops, so that the API server moves
	// its connections to a pod that keeps running (webhookdrain); zero
	// stops it at once.
	WebhookDrainPeriod time.Duration

	// PprofAddr serves net/http/pprof when set; empty (the default) serves
	// nothing.
	PprofAddr string

	// LogLevel is the level of the manager's logger, which the
	// OperatorConfig sets live.
	LogLevel zap.AtomicLevel
	// ServiceAccount is the manager's own, as namespace/name, for the
	// RoleBinding that status asks an admin to create; empty is
	// <Namespace>/myoperator-controller-manager.
	ServiceAccount string
	// MaxConcurrentReconciles per controller; 0 uses a default.
	MaxConcurrentReconciles int
	// NewQueue, when set, builds each controller's work queue in place of
	// controller-runtime's priority queue (controller.Options.NewQueue).
	// The binary leaves it nil; the model check wraps the priority queue
	// to see the reconciles a controller has scheduled for later
	// (RequeueAfter, retries), which the queue's metrics do not count.
	NewQueue func(controllerName string, rateLimiter workqueue.TypedRateLimiter[ctrl.Request]) workqueue.TypedRateLimitingInterface[ctrl.Request]

	// WatchNamespaces, when not empty, are the only namespaces whose
	// Drinks the operator serves (--watch-namespaces): the manager's cache
	// lists and watches Drinks and their ConfigMaps there alone, so a
	// Drink elsewhere is never reconciled, reported or given a ConfigMap.
	// Empty serves every namespace. Guestbooks and the OperatorConfig are
	// cluster-scoped and stay cluster-wide; so do the webhooks and the
	// storage migration (docs/install.md#namespace-scope says why). Check
	// it with ValidateWatchNamespaces.
	WatchNamespaces []string

	// Sharding, when set, shares the Drinks among the replicas
	// (--shard-drinks, ShardingOptions); nil leaves them to the leader.
	Sharding *ShardingOptions

	// inProcess holds what only tests set, through export_test.go: the
	// binary runs one manager per process and never sets it.
	inProcess inProcessOptions
}

// inProcessOptions let a test run several managers in one process and
// adjust them. Their zero value is the binary's behaviour.
type inProcessOptions struct {
	// skipNameValidation: controller names are unique per process, so a
	// second manager's controllers would clash with the first's.
	skipNameValidation bool
	// rotatorName names the certificate rotator's controller, which does
	// not heed SkipNameValidation; empty is cert-controller's default.
	rotatorName string
	// tuneMigration adjusts the storage migrator before it runs (a
	// shorter page size and back-off, a hook between pages).
	tuneMigration func(*migrate.Migrator)
}

// ShardingOptions turn on sharing the Drinks among the replicas
// (--shard-drinks): each replica reconciles the Drinks of the buckets it
// holds, watching only those through the API server's sharded list and
// watch (internal/shard). Guestbooks, the OperatorConfig and the storage
// migration stay with the leader; every replica serves the webhooks.
type ShardingOptions struct {
	// Duration is how long a replica that stopped renewing its member
	// Lease still counts as a member; Renew how often each replica renews
	// it (the Leases are read every second: internal/shard). Zero uses 15 s
	// and 5 s.
	Duration, Renew time.Duration
}

// CertOptions configure the certificate rotator.
type CertOptions struct {
	// SecretName holds the CA and serving certificate, in Namespace.
	SecretName string
	// DNSName is the webhook Service's in-cluster name.
	DNSName string
	// ExtraDNSNames are further names the serving certificate is valid for
	// (for example localhost, when the API server calls a URL on loopback).
	ExtraDNSNames []string
	// ExtraIPs are IP addresses it is valid for too (make run's address
	// for a kind cluster): served from a leaf the manager signs from the
	// rotator's CA (internal/certs), since the rotator writes DNS names only.
	ExtraIPs []net.IP
	// CAValidity and CertValidity bound the certificates' lifetimes;
	// Lookahead is how long before expiry they are renewed, checked every
	// CheckEvery. Zero uses cert-controller's defaults.
	CAValidity, CertValidity, Lookahead, CheckEvery time.Duration
}

// New builds the manager with every webhook, the certificate rotator (when
// asked) and the readiness checks.
func New(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	webhookOpts := crwebhook.Options{Host: o.WebhookHost, Port: o.WebhookPort, CertDir: o.CertDir, TLSOpts: tlsOptions(o)}
	if o.Certs != nil {
		o.IssuedCertSecret = ""
	}
	var syncer *certs.Syncer
	if o.Certs != nil || o.IssuedCertSecret != "" {
		syncer = &certs.Syncer{}
		webhookOpts.TLSOpts = append(webhookOpts.TLSOpts, func(c *tls.Config) { c.GetCertificate = syncer.GetCertificate })
	}
	webhookServer := webhookdrain.New(crwebhook.NewServer(webhookOpts), o.WebhookDrainPeriod)
	// The conversion handler streams its body and holds at most about
	// three objects of it at once (the decoder's window and what arrived
	// before the review's uid); every other handler's body is read whole.
	guard := webhookguard.New(o.WebhookLimits, map[string]int64{webhook.ConvertPath: 3 * o.Conversion.WithDefaults().MaxObjectBytes})
	webhookServer.Wrap = guard.Wrap
	if err := ValidateWatchNamespaces(o.WatchNamespaces); err != nil {
		return nil, err
	}
	mgrOpts := ctrl.Options{
		Scheme: scheme.New(),
		// The operator reads one Secret, its webhook certificate, in its own
		// namespace; RBAC allows no more.
		Cache: cache.Options{
			// Managed fields are never read; stripping them halves the
			// memory of each cached object.
			DefaultTransform: cache.TransformStripManagedFields(),
			ByObject: map[client.Object]cache.ByObject{
				// Its own certificate Secret only, by name; RBAC allows no more.
				&corev1.Secret{}: {Namespaces: map[string]cache.Config{o.Namespace: {
					FieldSelector: fields.OneTermEqualSelector("metadata.name", o.certSecretName()),
				}}},
				// Only what the operator writes, not every ConfigMap of the
				// cluster. Pods, StatefulSets and Services are watched only
				// in the operand namespaces (operandCacheOptions). A
				// Drink's ConfigMap is kept as a digest of what the
				// reconciler compares, and Drinks share their repeated
				// strings: the two caches grow with every Drink.
				&corev1.ConfigMap{}: {Label: managedBy, Transform: reconcile.TrimConfigMap},
				&drinksv1.Drink{}:   {Transform: reconcile.TrimDrink},
			},
		},
		Metrics:                       metricsOptions(o, syncer),
		HealthProbeBindAddress:        o.ProbeAddr,
		WebhookServer:                 webhookServer,
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              names.LeaderElectionID,
		LeaderElectionNamespace:       o.Namespace,
		LeaderElectionReleaseOnCancel: true,
	}
	mgrOpts.Cache.DefaultNamespaces = servedNamespaces(o.WatchNamespaces)
	if o.LeaseDuration > 0 {
		mgrOpts.LeaseDuration, mgrOpts.RenewDeadline, mgrOpts.RetryPeriod = &o.LeaseDuration, &o.RenewDeadline, &o.RetryPeriod
	}
	// A standby starts its controllers' sources before it leads, so that
	// its work queues hold every object when it takes the Lease: without
	// it, a new leader first replayed the whole cache into its queues
	// before its first reconcile, seconds after it took the Lease
	// (docs/BENCHMARKS.md, SIGTERM handover). Reconciles still start only
	// in the leader.
	warmup := true
	mgrOpts.Controller.EnableWarmup = &warmup
	if o.inProcess.skipNameValidation {
		skip := true
		mgrOpts.Controller.SkipNameValidation = &skip
	}
	mgrOpts.PprofBindAddress = o.PprofAddr
	if o.GracefulShutdownTimeout > 0 {
		mgrOpts.GracefulShutdownTimeout = &o.GracefulShutdownTimeout
	}
	// Writes are counted per reconcile at the transport (see writecount).
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(writecount.Transport)
	// And the bytes of what it reads, by resource (sharing the Drinks is
	// measured by them).
	cfg.Wrap(readbytes.Transport)
	var lock *leaderlock.Lock
	if o.LeaderElection {
		var err error
		if lock, err = leaderlock.New(cfg, o.Namespace, names.LeaderElectionID, o.PodName, o.renewDeadline()); err != nil {
			return nil, err
		}
		mgrOpts.LeaderElectionResourceLockInterface = lock
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if lock != nil {
		// The Lease goes to a standby as soon as the reconcilers have
		// stopped, not after the webhook drain.
		if err := mgr.Add(&leaderlock.Releaser{Lock: lock, Cache: mgr.GetCache(), Elected: mgr.Elected(), Timeout: o.renewDeadline()}); err != nil {
			return nil, err
		}
	}
	if err := mgr.Add(webhookServer.DrainOnStop()); err != nil {
		return nil, err
	}

	certsReady, err := addCertificates(mgr, o, syncer)
	if err != nil {
		return nil, err
	}
	// One record of the accepted configuration for the webhooks and every
	// reconciler: read from the API server where the configuration is
	// resolved, not on every reconcile (opconfig.Records).
	records := &opconfig.Records{Reader: mgr.GetAPIReader(), Namespace: o.Namespace, Elected: mgr.Elected()}
	if err := webhook.Setup(mgr, webhook.Options{Namespace: o.Namespace, Conversion: o.Conversion, Records: records}); err != nil {
		return nil, err
	}
	// Served with sharding or without: while a rollout turns it on or off,
	// the API server may call a replica of either kind.
	mgr.GetWebhookServer().Register(shard.FencePath, &admission.Webhook{Handler: &shard.Fence{Reader: mgr.GetAPIReader(), Namespace: o.Namespace}})
	if err := addControllers(cfg, mgr, o, records); err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	// Ready means: the webhook server serving a certificate (with the
	// rotator: written and injected; with cert-manager: loaded from its
	// Secret). Until then the Service must not send traffic here.
	if err := mgr.AddReadyzCheck("webhook", webhookReady(certsReady, mgr.GetWebhookServer().StartedChecker())); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("caches", cachesReady(mgr.GetCache())); err != nil {
		return nil, err
	}
	return mgr, nil
}

// webhookReads are the kinds the webhooks read from the cache: the
// OperatorConfig (Drink defaults, when the API server does not answer) and
// the Guestbooks (whose ConfigMap names are taken).
func webhookReads() []client.Object {
	return []client.Object{&operatorv1alpha1.OperatorConfig{}, &webappv1.Guestbook{}}
}

// cachesReady is the readiness check of the caches. Ready means that the
// informers the webhooks read have synced: a replica that cannot see the
// OperatorConfig and the Guestbooks yet must not take webhook traffic. It
// does not wait for the Drinks' informer: when Drinks are stored in an
// older version (an upgrade from v1alpha1 storage, before the migration),
// its first LIST goes through the conversion webhook, which the webhook
// Service sends only to Ready pods; waiting for it would keep every
// replica unready for good (found on a real node, E2E_NODE=real).
func cachesReady(c cache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		for _, obj := range webhookReads() {
			inf, err := c.GetInformer(req.Context(), obj, cache.BlockUntilSynced(false))
			if err != nil {
				return fmt.Errorf("the %T informer: %w", obj, err)
			}
			if !inf.HasSynced() {
				return fmt.Errorf("the %T cache has not synced", obj)
			}
		}
		return nil
	}
}

// addControllers adds the storage migration and the reconcilers.
func addControllers(cfg *rest.Config, mgr ctrl.Manager, o Options, records *opconfig.Records) error {
	direct, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return err
	}
	migration := &migrate.Status{}
	migrationDone := make(chan event.GenericEvent, 1)
	migrator := &migrate.Migrator{
		Client: direct, Log: mgr.GetLogger().WithName("storage-migration"), Status: migration, Notify: migrationDone,
	}
	if o.inProcess.tuneMigration != nil {
		o.inProcess.tuneMigration(migrator)
	}
	if err := mgr.Add(migrator); err != nil {
		return err
	}
	if err := mgr.Add(&bootstrap.LeaderRelease{
		Client: direct, Log: mgr.GetLogger().WithName("release-defaults"), Interval: 5 * time.Second, Timeout: 2 * time.Minute,
	}); err != nil {
		return err
	}
	if o.LogLevel == (zap.AtomicLevel{}) {
		o.LogLevel = zap.NewAtomicLevel()
	}
	copts := controller.Options{MaxConcurrentReconciles: o.MaxConcurrentReconciles, NewQueue: o.NewQueue}
	if copts.MaxConcurrentReconciles == 0 {
		copts.MaxConcurrentReconciles = 4
	}
	if err := (&reconcile.OperatorConfigReconciler{
		Client: mgr.GetClient(), Level: o.LogLevel, Namespace: o.Namespace,
		Recorder: mgr.GetEventRecorder(reconcile.EventRecorderName), Migration: migration, MigrationDone: migrationDone, Elected: mgr.Elected(),
		Records: records,
	}).SetupWithManager(mgr, copts); err != nil {
		return err
	}
	operands := &operandcache.Caches{Config: cfg, Options: operandCacheOptions(mgr)}
	if err := mgr.Add(operands); err != nil {
		return err
	}
	if err := (&reconcile.GuestbookReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(reconcile.EventRecorderName), Namespace: o.Namespace,
		Operands: operands, ServiceAccount: o.serviceAccount(), Records: records,
	}).SetupWithManager(mgr, copts); err != nil {
		return err
	}
	drinks := &reconcile.DrinkReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(reconcile.EventRecorderName), Namespace: o.Namespace,
		Records: records,
	}
	if o.Sharding != nil {
		// Every replica serves its share and counts its Drinks
		// (Inventory); the leader counts the Guestbooks.
		if err := mgr.Add(&reconcile.Inventory{Reader: mgr.GetCache(), NoDrinks: true}); err != nil {
			return err
		}
		return shard.Setup(mgr, shard.Options{
			Namespace: o.Namespace, Identity: o.PodName, Duration: o.Sharding.Duration, Renew: o.Sharding.Renew,
			// A bucket's cache holds what the manager's would.
			Namespaces: servedNamespaces(o.WatchNamespaces), ConfigMaps: managedBy,
			TrimDrink: reconcile.TrimDrink, TrimConfigMap: reconcile.TrimConfigMap, Controller: copts,
		}, drinks)
	}
	if err := mgr.Add(&reconcile.Inventory{Reader: mgr.GetCache()}); err != nil {
		return err
	}
	return drinks.SetupWithManager(mgr, copts)
}

// metricsOptions: HTTPS to callers the API server authenticates and
// authorizes. With the operator's certificates (its rotator's or
// cert-manager's) the endpoint serves the webhook's certificate, which is
// also valid for the metrics Service, so that Prometheus verifies it
// against the CA instead of sending its token to whoever answers; with
// files (OLM) controller-runtime's self-signed one.
func metricsOptions(o Options, syncer *certs.Syncer) metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.MetricsAddr}
	if o.SecureMetrics {
		m.SecureServing = true
		m.FilterProvider = filters.WithAuthenticationAndAuthorization
		m.TLSOpts = tlsOptions(o)
		if syncer != nil {
			m.TLSOpts = append(m.TLSOpts, func(c *tls.Config) { c.GetCertificate = syncer.GetCertificate })
		}
	}
	return m
}

// tlsOptions set what both TLS servers (webhooks, secure metrics) accept:
// TLS 1.2 at least, stated here rather than left to Go's default, and
// HTTP/2 only when asked for (controller-runtime offers h2 alone in ALPN).
func tlsOptions(o Options) []func(*tls.Config) {
	protos := []string{"http/1.1"}
	if o.EnableHTTP2 {
		protos = []string{"h2", "http/1.1"}
	}
	return []func(*tls.Config){func(c *tls.Config) {
		c.MinVersion = tls.VersionTLS12
		c.NextProtos = protos
	}}
}

// addCertificates sets up where the webhook certificate comes from and
// returns a channel closed once it is served: the rotator's (which also
// injects the CA), a Secret someone else issues, or files (closed at once:
// the webhook server loads them before it serves).
func addCertificates(mgr ctrl.Manager, o Options, syncer *certs.Syncer) (<-chan struct{}, error) {
	ready := make(chan struct{})
	switch {
	case o.Certs != nil:
		if err := addCAPublisher(mgr, o); err != nil {
			return nil, err
		}
		return ready, addCertRotator(mgr, o, syncer, ready)
	case o.IssuedCertSecret != "":
		syncer.Reader = mgr.GetCache()
		syncer.Secret = types.NamespacedName{Namespace: o.Namespace, Name: o.IssuedCertSecret}
		syncer.Log = mgr.GetLogger().WithName("cert-sync")
		if err := addCAPublisher(mgr, o); err != nil {
			return nil, err
		}
		return syncer.Loaded(), mgr.Add(syncer)
	default:
		close(ready)
		return ready, nil
	}
}

// addCAPublisher publishes the serving certificate's CA in names.CAConfigMap,
// for Prometheus (config/prometheus), so that verifying the metrics
// endpoint needs no read of the Secret that holds the keys.
func addCAPublisher(mgr ctrl.Manager, o Options) error {
	return mgr.Add(&certs.CAPublisher{
		Reader: mgr.GetCache(), Writer: mgr.GetClient(),
		Secret:    types.NamespacedName{Namespace: o.Namespace, Name: o.certSecretName()},
		ConfigMap: names.CAConfigMap, Labels: map[string]string{names.ManagedByLabel: names.ManagedByValue},
		FieldOwner: reconcile.FieldOwner, Log: mgr.GetLogger().WithName("ca-publish"),
	})
}

// certSecretName is the Secret that holds the webhook certificate: the
// rotator's, or the one someone else issues.
func (o Options) certSecretName() string {
	switch {
	case o.Certs != nil && o.Certs.SecretName != "":
		return o.Certs.SecretName
	case o.Certs == nil && o.IssuedCertSecret != "":
		return o.IssuedCertSecret
	}
	return names.CertSecret
}

func addCertRotator(mgr ctrl.Manager, o Options, syncer *certs.Syncer, ready chan struct{}) error {
	c := o.Certs
	secret := o.certSecretName()
	dns := c.DNSName
	if dns == "" {
		dns = fmt.Sprintf("%s.%s.svc", names.WebhookService, o.Namespace)
	}
	webhooks := []rotator.WebhookInfo{
		{Name: names.MutatingWebhookConfig, Type: rotator.Mutating},
		{Name: names.ValidatingWebhookConfig, Type: rotator.Validating},
		{Name: names.DrinkCRD, Type: rotator.CRDConversion},
	}
	if o.Sharding != nil {
		webhooks = append(webhooks, rotator.WebhookInfo{Name: names.ShardFenceWebhookConfig, Type: rotator.Validating})
	}
	err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: o.Namespace, Name: secret},
		CertDir:        o.CertDir,
		CAName:         "myoperator-ca",
		CAOrganization: names.AppName,
		DNSName:        dns,
		ExtraDNSNames:  append(slices.Clone(c.ExtraDNSNames), fmt.Sprintf("%s.%s.svc", names.MetricsService, o.Namespace)),
		IsReady:        ready,
		Webhooks:       webhooks,
		FieldOwner:     reconcile.FieldOwner,
		// Every replica serves webhooks, so every replica keeps its mounted
		// certificate current; writes to the Secret and the CA bundles are
		// idempotent across replicas.
		RequireLeaderElection:  false,
		CaCertDuration:         c.CAValidity,
		ServerCertDuration:     c.CertValidity,
		LookaheadInterval:      c.Lookahead,
		RotationCheckFrequency: c.CheckEvery,
		EnableReadinessCheck:   true,
		ControllerName:         o.inProcess.rotatorName,
	})
	if err != nil {
		return fmt.Errorf("adding the certificate rotator: %w", err)
	}
	syncer.Reader = mgr.GetCache()
	syncer.Secret = types.NamespacedName{Namespace: o.Namespace, Name: secret}
	syncer.Dir = o.CertDir
	syncer.IPs = c.ExtraIPs
	syncer.Log = mgr.GetLogger().WithName("cert-sync")
	return mgr.Add(syncer)
}

func webhookReady(certsReady <-chan struct{}, serving func(*http.Request) error) healthz.Checker {
	return func(req *http.Request) error {
		select {
		case <-certsReady:
		default:
			return errors.New("no webhook certificate served yet (the rotator's not written and injected, or the issued Secret not loaded)")
		}
		return serving(req)
	}
}

func (o Options) serviceAccount() string {
	if o.ServiceAccount != "" {
		return o.ServiceAccount
	}
	return o.Namespace + "/" + names.ServiceAccount
}

// renewDeadline is the leader's renew deadline, controller-runtime's
// default when the durations are not set.
func (o Options) renewDeadline() time.Duration {
	if o.LeaseDuration == 0 || o.RenewDeadline == 0 {
		return 10 * time.Second
	}
	return o.RenewDeadline
}

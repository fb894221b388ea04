package managerflags

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/app"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/internal/validation"
	"github.com/example/myoperator/internal/webhook"
	"github.com/example/myoperator/internal/webhookguard"
)

// Flags are the manager's flags. Those that map one to one onto a field of
// app.Options are bound to it; the others are turned into Options by
// Options, after Validate.
type Flags struct {
	// Manager holds the flags that are fields of app.Options as they are.
	Manager app.Options

	QPS             float64
	Burst           int
	Development     bool
	ManageCerts     bool
	ExtraDNSNames   string
	ExtraIPs        string
	CertSecret      string
	GuestbookImage  string
	WatchNamespaces string
	ShardDrinks     bool
	Sharding        app.ShardingOptions
	ShowVersion     bool
}

// Register binds every flag to f, with its default and its help text. The
// defaults of --namespace, --pod-name and --guestbook-image come from the
// environment the Deployment sets (the downward API, GUESTBOOK_IMAGE).
func (f *Flags) Register(fs *flag.FlagSet) {
	o := &f.Manager
	fs.StringVar(&o.Namespace, "namespace", envOr("POD_NAMESPACE", names.Namespace), "Namespace the operator runs in: its certificate Secret and its Lease live there (POD_NAMESPACE).")
	fs.StringVar(&o.PodName, "pod-name", envOr("POD_NAME", ""), "The manager's pod (POD_NAME): the Lease holder identity is <pod-name>_<uuid>, which the fencing ValidatingAdmissionPolicy compares with the pod of the request's token; empty uses <hostname>_<uuid>.")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", "0", "Address of the metrics endpoint (for example :8443); 0 disables it.")
	fs.BoolVar(&o.SecureMetrics, "metrics-secure", true, "Serve metrics over HTTPS, only to callers the API server authenticates and authorizes.")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", true, "Let the webhook and metrics servers speak HTTP/2 (the API server then sends its webhook calls over one connection rather than a TLS handshake for most calls under load); false for HTTP/1.1 only.")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", "", "Address to serve net/http/pprof on; empty disables it.")
	fs.StringVar(&o.WebhookHost, "webhook-host", "", "Address the webhook server binds to; empty for all.")
	fs.IntVar(&o.WebhookPort, "webhook-port", 9443, "Port of the webhook server.")
	fs.StringVar(&o.CertDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "Directory of the webhook server's tls.crt and tls.key.")
	fs.BoolVar(&f.ManageCerts, "manage-webhook-certs", true, "Create, rotate and inject the webhook certificates; false when cert-manager issues them into --webhook-cert-secret (read through the API, served from memory) or, with --webhook-cert-secret=\"\", when OLM mounts them in --webhook-cert-dir.")
	fs.StringVar(&f.CertSecret, "webhook-cert-secret", names.CertSecret, "Secret, in --namespace, that holds the webhook CA and serving certificate (written by the manager, or with --manage-webhook-certs=false by cert-manager).")
	fs.StringVar(&f.ExtraDNSNames, "webhook-extra-dns-names", "", "Comma-separated further names for the serving certificate (for example localhost).")
	fs.StringVar(&f.ExtraIPs, "webhook-extra-ip-addresses", "", "Comma-separated IP addresses the serving certificate is valid for too (for example the address make run gives a kind cluster); needs the manager's own certificates (--manage-webhook-certs).")
	fs.DurationVar(&o.WebhookDrainPeriod, "webhook-drain-period", 3*time.Second, "On shutdown, how long the webhook server closes each connection after its response before it stops, so that the API server moves to another replica without a failed call.")
	fs.Int64Var(&o.Conversion.MaxRequestBytes, "conversion-max-request-bytes", webhook.DefaultMaxConversionRequestBytes,
		"Longest conversion request (a whole LIST page, or an unpaginated list, of Drinks read through another version) a replica takes; a longer one is answered 413. The default holds 50,000 Drinks (the largest cluster in docs/sizing.md) of 8 KiB each; the memory a request takes follows its largest object, not this.")
	fs.Int64Var(&o.Conversion.MaxObjectBytes, "conversion-max-object-bytes", webhook.DefaultMaxConversionObjectBytes,
		"Longest object in a conversion request (kube-apiserver stores none longer than the default); a request with a longer one is answered 413.")
	fs.IntVar(&o.WebhookLimits.MaxInFlight, "webhook-max-requests-in-flight", webhookguard.DefaultMaxInFlight,
		"Requests each webhook endpoint serves at once; beyond, 429 with Retry-After, which the API server retries within its call's timeout.")
	fs.Int64Var(&o.WebhookLimits.BufferBytes, "webhook-max-buffered-bytes", 0,
		"Request bytes the webhook endpoints hold together; beyond, 429. 0: half of the container's memory limit (MEMORY_LIMIT), or 128 MiB when it is not known.")
	fs.DurationVar(&o.WebhookLimits.ReadTimeout, "webhook-read-timeout", webhookguard.DefaultReadTimeout,
		"How long a webhook request's body may take to arrive after its headers; a slower one is cut (the API server gives up on a call after at most 30 s).")
	fs.DurationVar(&o.WebhookLimits.WriteTimeout, "webhook-write-timeout", webhookguard.DefaultWriteTimeout,
		"How long a webhook request may take, from its headers to the last byte of its answer; the connection of a slower one is cut.")
	// Reconciles mostly wait on the API server, so more workers than cores
	// pay off: the Drink benchmark found 16 to 32 best on 2 cores.
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", 16, "Reconciles each controller runs at once (16 to 32 measured best on 2 cores: docs/BENCHMARKS.md).")
	fs.BoolVar(&o.LeaderElection, "leader-elect", false, "Elect a leader through the Lease "+names.LeaderElectionID+", so that only one replica reconciles; every replica serves the webhooks.")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long a Lease holds without renewal: the wait after a leader dies without releasing it.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader keeps trying to renew before it gives up leading.")
	// A follower notices a released Lease on its next try, up to 1.2 retry
	// periods later; 1 s (client-go's default is 2 s) keeps the handover
	// after a SIGTERM near 1-2 s for one more Lease write per second.
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", time.Second, "How often the leader renews and followers try to take the Lease.")
	fs.DurationVar(&o.GracefulShutdownTimeout, "graceful-shutdown-timeout", 30*time.Second, "How long running reconciles may take to finish on shutdown.")
	fs.Float64Var(&f.QPS, "kube-api-qps", -1, "Client-side limit of API requests per second; -1 leaves fairness to the API server (API Priority and Fairness).")
	fs.IntVar(&f.Burst, "kube-api-burst", 0, "Client-side burst of API requests (with --kube-api-qps > 0).")
	fs.StringVar(&f.GuestbookImage, "guestbook-image", envOr("GUESTBOOK_IMAGE", operatorv1alpha1.DefaultGuestbookImage),
		"The Guestbook pods' image when OperatorConfig cluster's spec.guestbook.image is not set: the release's Guestbook server, which its manifests name by digest (GUESTBOOK_IMAGE).")
	fs.StringVar(&f.WatchNamespaces, "watch-namespaces", "",
		"Comma-separated namespaces whose Drinks the operator serves; empty serves every namespace, and Drinks elsewhere get no ConfigMap, status or event. It must match the install's RBAC (config/namespace-scope, the chart's watchNamespaces): see docs/install.md#namespace-scope.")
	fs.BoolVar(&f.ShardDrinks, "shard-drinks", false,
		"Share the Drinks among the replicas, each reconciling and watching only its share through the API server's sharded list and watch (ShardedListAndWatch); Guestbooks and the OperatorConfig stay with the leader. See docs/sharding.md.")
	fs.DurationVar(&f.Sharding.Duration, "shard-member-lease-duration", 15*time.Second,
		"With --shard-drinks: how long a replica that stopped renewing its member Lease keeps its share before the others take it.")
	fs.DurationVar(&f.Sharding.Renew, "shard-renew-period", 5*time.Second,
		"With --shard-drinks: how often each replica renews its member Lease and looks at the buckets when nothing changes; it reads the others' member Leases every second (or every period, if shorter), and looks at the buckets every second while a handover is under way.")
	fs.BoolVar(&f.Development, "zap-devel", false, "Log human-readable console lines instead of JSON.")
	fs.BoolVar(&f.ShowVersion, "version", false, "Print the version and exit.")
}

// Validate checks the flags together; each error names its flag and the
// rule, and every one found is returned.
func (f *Flags) Validate() error {
	var errs []error
	if e := validation.ValidateGuestbookImage(f.GuestbookImage); len(e) > 0 {
		errs = append(errs, fmt.Errorf("--guestbook-image: %w", e.ToAggregate()))
	}
	if _, err := app.ParseWatchNamespaces(f.WatchNamespaces); err != nil {
		errs = append(errs, err)
	}
	if f.ShardDrinks && (f.Sharding.Renew <= 0 || f.Sharding.Duration < 2*f.Sharding.Renew) {
		errs = append(errs, fmt.Errorf("--shard-member-lease-duration (%s) must be at least twice --shard-renew-period (%s), which must be positive: "+
			"a replica renewing on time must never look gone", f.Sharding.Duration, f.Sharding.Renew))
	}
	if err := f.Manager.Conversion.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := f.Manager.WebhookLimits.Validate(); err != nil {
		errs = append(errs, err)
	}
	if _, err := parseIPs(f.ExtraIPs); err != nil {
		errs = append(errs, err)
	} else if f.ExtraIPs != "" && !f.ManageCerts {
		errs = append(errs, errors.New("--webhook-extra-ip-addresses needs --manage-webhook-certs: the certificate for them is signed with the CA key that only the manager's own rotator keeps"))
	}
	return errors.Join(errs...)
}

// Options validates the flags and returns the manager's options. The
// Guestbook image is not among them: it sets the release's default
// (operatorv1alpha1.DefaultGuestbookImage), which main does once, before
// anything reads it.
func (f *Flags) Options() (app.Options, error) {
	if err := f.Validate(); err != nil {
		return app.Options{}, err
	}
	o := f.Manager
	o.WatchNamespaces, _ = app.ParseWatchNamespaces(f.WatchNamespaces) // Validate parsed it
	if f.ShardDrinks {
		sharding := f.Sharding
		o.Sharding = &sharding
	}
	if f.ManageCerts {
		o.Certs = &app.CertOptions{SecretName: f.CertSecret}
		if f.ExtraDNSNames != "" {
			o.Certs.ExtraDNSNames = strings.Split(f.ExtraDNSNames, ",")
		}
		o.Certs.ExtraIPs, _ = parseIPs(f.ExtraIPs) // Validate parsed them
	} else {
		o.IssuedCertSecret = f.CertSecret
	}
	return o, nil
}

// parseIPs parses --webhook-extra-ip-addresses; empty is none.
func parseIPs(list string) ([]net.IP, error) {
	if list == "" {
		return nil, nil
	}
	var ips []net.IP
	for i, s := range strings.Split(list, ",") {
		ip := net.ParseIP(strings.TrimSpace(s))
		if ip == nil {
			return nil, fmt.Errorf("--webhook-extra-ip-addresses: entry %d %q is not an IP address", i+1, s)
		}
		ips = append(ips, ip)
	}
	return ips, nil
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

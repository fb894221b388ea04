// Command manager runs the myoperator controller manager: the webhooks that
// convert, default and validate the project's APIs (with certificates it
// manages itself), the storage-version migration and the reconcilers.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/internal/app"
	"github.com/example/myoperator/internal/logging"
	"github.com/example/myoperator/internal/memlimit"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/internal/validation"
	"github.com/example/myoperator/internal/version"
	"github.com/example/myoperator/internal/webhook"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		os.Exit(1)
	}
}

func run() error {
	o := app.Options{}
	var (
		qps           float64
		burst         int
		development   bool
		manageCerts   bool
		extraDNSNames string
		certSecret    string
	)
	flag.StringVar(&o.Namespace, "namespace", envOr("POD_NAMESPACE", names.Namespace), "Namespace the operator runs in: its certificate Secret and its Lease live there.")
	flag.StringVar(&o.MetricsAddr, "metrics-bind-address", "0", "Address of the metrics endpoint (for example :8443); 0 disables it.")
	flag.BoolVar(&o.SecureMetrics, "metrics-secure", true, "Serve metrics over HTTPS, only to callers the API server authenticates and authorizes.")
	flag.BoolVar(&o.EnableHTTP2, "enable-http2", false, "Let the webhook and metrics servers speak HTTP/2; off by default (HTTP/2 rapid reset, CVE-2023-44487).")
	flag.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	flag.StringVar(&o.WebhookHost, "webhook-host", "", "Address the webhook server binds to; empty for all.")
	flag.IntVar(&o.WebhookPort, "webhook-port", 9443, "Port of the webhook server.")
	flag.StringVar(&o.CertDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "Directory of the webhook server's tls.crt and tls.key.")
	flag.Int64Var(&o.Conversion.MaxRequestBytes, "conversion-max-request-bytes", webhook.DefaultMaxConversionRequestBytes,
		"Longest conversion request (a whole LIST page, or an unpaginated list, of Drinks read through another version) a replica takes; a longer one is answered 413. The memory it takes follows the largest object, not this.")
	flag.Int64Var(&o.Conversion.MaxObjectBytes, "conversion-max-object-bytes", webhook.DefaultMaxConversionObjectBytes,
		"Longest object in a conversion request; a request with a longer one is answered 413.")
	flag.BoolVar(&manageCerts, "manage-webhook-certs", true, "Create, rotate and inject the webhook certificates; false when cert-manager issues them into --webhook-cert-secret (read through the API, served from memory) or, with --webhook-cert-secret=\"\", when OLM mounts them in --webhook-cert-dir.")
	flag.StringVar(&certSecret, "webhook-cert-secret", names.CertSecret, "Secret, in --namespace, that holds the webhook CA and serving certificate (written by the manager, or with --manage-webhook-certs=false by cert-manager).")
	flag.StringVar(&extraDNSNames, "webhook-extra-dns-names", "", "Comma-separated further names for the serving certificate (for example localhost).")
	// Reconciles mostly wait on the API server, so more workers than cores
	// pay off: make bench found 16-32 best for Drinks on 2 cores.
	flag.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", 16, "Reconciles each controller runs at once.")
	flag.StringVar(&o.PodName, "pod-name", envOr("POD_NAME", ""), "The manager's pod: the Lease holder identity is <pod-name>_<uuid>, which the fencing ValidatingAdmissionPolicy compares with the pod of the request's token; empty uses <hostname>_<uuid>.")
	flag.BoolVar(&o.LeaderElection, "leader-elect", false, "Elect a leader through a Lease, so that only one replica reconciles.")
	flag.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long a Lease holds without renewal: the wait after a leader dies without releasing it.")
	flag.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader keeps trying to renew before it gives up leading.")
	// A follower notices a released Lease on its next try, up to 1.2 retry
	// periods later; 1 s (client-go's default is 2 s) keeps the handover
	// after a SIGTERM near 1-2 s for one more Lease write per second.
	flag.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", time.Second, "How often the leader renews and followers try to take the Lease.")
	flag.DurationVar(&o.GracefulShutdownTimeout, "graceful-shutdown-timeout", 30*time.Second, "How long running reconciles may take to finish on shutdown.")
	flag.DurationVar(&o.WebhookDrainPeriod, "webhook-drain-period", 3*time.Second, "On shutdown, how long the webhook server closes each connection after its response before it stops, so that the API server moves to another replica without a failed call.")
	flag.StringVar(&o.PprofAddr, "pprof-bind-address", "", "Address to serve net/http/pprof on; empty disables it.")
	flag.Float64Var(&qps, "kube-api-qps", -1, "Client-side limit of API requests per second; -1 leaves fairness to the API server (API Priority and Fairness).")
	flag.IntVar(&burst, "kube-api-burst", 0, "Client-side burst of API requests (with --kube-api-qps > 0).")
	guestbookImage := flag.String("guestbook-image", envOr("GUESTBOOK_IMAGE", operatorv1alpha1.DefaultGuestbookImage),
		"The Guestbook pods' image when OperatorConfig cluster's spec.guestbook.image is not set: the release's Guestbook server, which its manifests name by digest (GUESTBOOK_IMAGE).")
	watchNamespaces := flag.String("watch-namespaces", "",
		"Comma-separated namespaces whose Drinks the operator serves; empty serves every namespace. It must match the install's RBAC (config/namespace-scope, the chart's watchNamespaces): see docs/install.md#namespace-scope.")
	shardDrinks := flag.Bool("shard-drinks", false,
		"Share the Drinks among the replicas, each reconciling and watching only its share through the API server's sharded list and watch (ShardedListAndWatch); Guestbooks and the OperatorConfig stay with the leader. See docs/sharding.md.")
	var sharding app.ShardingOptions
	flag.DurationVar(&sharding.Duration, "shard-member-lease-duration", 15*time.Second,
		"With --shard-drinks: how long a replica that stopped renewing its member Lease keeps its share before the others take it.")
	flag.DurationVar(&sharding.Renew, "shard-renew-period", 5*time.Second,
		"With --shard-drinks: how often each replica renews its member Lease and looks at the buckets.")
	showVersion := flag.Bool("version", false, "Print the version and exit.")
	flag.BoolVar(&development, "zap-devel", false, "Log human-readable console lines instead of JSON.")
	flag.Parse()
	if *showVersion {
		fmt.Println(version.String())
		return nil
	}

	// The default follows the install's manifests, not the binary: make
	// release-push points them at the registry the images went to, which
	// no binary built before the push can know. It is set once, before
	// anything reads it.
	if errs := validation.ValidateGuestbookImage(*guestbookImage); len(errs) > 0 {
		return fmt.Errorf("--guestbook-image: %w", errs.ToAggregate())
	}
	operatorv1alpha1.DefaultGuestbookImage = *guestbookImage
	watched, err := app.ParseWatchNamespaces(*watchNamespaces)
	if err != nil {
		return err
	}
	o.WatchNamespaces = watched
	if *shardDrinks {
		if sharding.Renew <= 0 || sharding.Duration < 2*sharding.Renew {
			return fmt.Errorf("--shard-member-lease-duration (%s) must be at least twice --shard-renew-period (%s), which must be positive: "+
				"a replica renewing on time must never look gone", sharding.Duration, sharding.Renew)
		}
		o.Sharding = &sharding
	}
	if err := o.Conversion.Validate(); err != nil {
		return err
	}

	log, level := logging.New(development)
	// The first line says which build runs, for whoever reads the logs.
	log.Info(version.String())
	ctrl.SetLogger(log)
	o.LogLevel = level
	// A bad MEMORY_LIMIT must not crash-loop the manager: it runs on the
	// runtime's default pacing and says why.
	if soft, err := memlimit.FromEnv(); err != nil {
		log.Error(err, "no Go soft memory limit")
	} else if soft > 0 {
		log.Info("Go soft memory limit from the container's", "bytes", soft, "fraction", memlimit.Fraction)
	}
	if manageCerts {
		o.Certs = &app.CertOptions{SecretName: certSecret}
		if extraDNSNames != "" {
			o.Certs.ExtraDNSNames = strings.Split(extraDNSNames, ",")
		}
	} else {
		o.IssuedCertSecret = certSecret
	}
	cfg := ctrl.GetConfigOrDie()
	cfg.QPS, cfg.Burst = float32(qps), burst
	cfg.UserAgent = names.AppName
	ctx := ctrl.SetupSignalHandler()
	// Restarted while the API server is away (the kubelet restarts a
	// leader that gave up its Lease in an outage at once), wait for it
	// rather than exit into CrashLoopBackOff: building the manager needs
	// discovery. A restarted API server answers before it serves the
	// CRDs' groups again (its CRD discovery follows an informer), so the
	// wait is for each group version the manager maps, too; the same wait
	// says what is missing when the CRDs are not installed.
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	if err := wait.PollUntilContextCancel(ctx, time.Second, true, func(context.Context) (bool, error) {
		if _, err := dc.ServerVersion(); err != nil {
			log.Info("waiting for the API server", "error", err.Error())
			return false, nil
		}
		for _, gv := range []schema.GroupVersion{drinksv1.GroupVersion, operatorv1alpha1.GroupVersion, webappv1.GroupVersion} {
			if _, err := dc.ServerResourcesForGroupVersion(gv.String()); err != nil {
				log.Info("waiting for the API server to serve the operator's CRDs", "groupVersion", gv.String(), "error", err.Error())
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		return err
	}
	mgr, err := app.New(cfg, o)
	if err != nil {
		return err
	}
	log.Info("starting manager", "namespace", o.Namespace, "leaderElection", o.LeaderElection, "watchNamespaces", o.WatchNamespaces,
		"shardDrinks", o.Sharding != nil)
	return mgr.Start(ctx)
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

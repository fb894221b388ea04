// Command cert-manager runs cert-manager's own issuing and CA-injection code,
// from the packages that github.com/cert-manager/cert-manager exports, in
// one process: the e2e suite's stand-in for a cert-manager installation,
// whose binary modules the Go module proxy does not serve. It wires what
// cert-manager's cmd/controller and cmd/cainjector wire and decides nothing
// itself: every reconcile is cert-manager's.
//
// Usage: cert-manager --kubeconfig FILE (or KUBECONFIG). No leader
// election, no metrics or health servers.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	cmscheme "github.com/cert-manager/cert-manager/pkg/client/clientset/versioned/scheme"
	controller "github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/util"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	apireg "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	// Each of these registers its controller with controller.Known() (or
	// its issuer type with the issuer factory) when imported, as in
	// cert-manager's cmd/controller: the Certificate controllers, the
	// CertificateRequest approver and signers, and the Issuer controller
	// with the CA and selfSigned issuer types.
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// cert-manager's defaults for its controller configuration; they live in
// an internal package of cert-manager
// (github.com/cert-manager/cert-manager/internal/apis/config/controller/v1alpha1), so they are restated here.
const (
	workers             = 5
	kubeAPIQPS          = 20
	kubeAPIBurst        = 50
	requestBackoffFirst = time.Hour
	requestBackoffMax   = 32 * time.Hour
)

func main() {
	flag.Parse() // --kubeconfig, registered by controller-runtime
	kubeconfig := flag.Lookup("kubeconfig").Value.String()
	if kubeconfig == "" {
		kubeconfig = os.Getenv("KUBECONFIG")
	}
	ctrl.SetLogger(klog.NewKlogr())
	if err := run(kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager:", err)
		os.Exit(1)
	}
}

func run(kubeconfig string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	g, ctx := errgroup.WithContext(logf.NewContext(ctx, logf.Log))
	if err := startControllers(ctx, g, kubeconfig); err != nil {
		return err
	}
	injector, err := newCAInjector(ctx)
	if err != nil {
		return err
	}
	g.Go(func() error { return injector.Start(ctx) })
	return g.Wait()
}

// startControllers starts every controller registered above, the way
// cert-manager's controller does once it leads.
func startControllers(ctx context.Context, g *errgroup.Group, kubeconfig string) error {
	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   kubeAPIQPS,
		KubernetesAPIBurst: kubeAPIBurst,
		CertificateOptions: controller.CertificateOptions{
			CertificateRequestMinimumBackoffDuration: requestBackoffFirst,
			CertificateRequestMaximumBackoffDuration: requestBackoffMax,
		},
	})
	if err != nil {
		return err
	}
	base, err := factory.Build()
	if err != nil {
		return err
	}
	for name, constructor := range controller.Known() {
		c, err := constructor(factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		g.Go(func() error { return c.Run(workers, ctx) })
	}
	base.SharedInformerFactory.Start(ctx.Done())
	base.KubeSharedInformerFactory.Start(ctx.Done())
	base.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	return nil
}

// newCAInjector builds cert-manager's cainjector with its default
// settings: every injectable kind, Certificates as a data source, Secrets
// read directly rather than cached.
func newCAInjector(ctx context.Context) (ctrl.Manager, error) {
	scheme := runtime.NewScheme()
	utilruntime.Must(kscheme.AddToScheme(scheme))
	utilruntime.Must(cmscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(apireg.AddToScheme(scheme))
	// The user agent names cainjector's field manager, as in cert-manager.
	cfg := util.RestConfigWithUserAgent(ctrl.GetConfigOrDie(), "cainjector")
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cache.Options{ReaderFailOnMissingInformer: true},
		Client:                 client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, err
	}
	err = cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			cainjector.MutatingWebhookConfigurationName:   true,
			cainjector.ValidatingWebhookConfigurationName: true,
			cainjector.APIServiceName:                     true,
			cainjector.CustomResourceDefinitionName:       true,
		},
	})
	return mgr, err
}

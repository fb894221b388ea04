// Command manager runs the myoperator controller manager: the Drink,
// Guestbook and OperatorConfig reconcilers and the webhooks that convert,
// default and validate the project's APIs.
package main

import (
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/example/myoperator/internal/logging"
	"github.com/example/myoperator/internal/scheme"
	"github.com/example/myoperator/internal/webhook"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		metricsAddr string
		probeAddr   string
		webhookPort int
		certDir     string
		leaderElect bool
		development bool
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "Address of the metrics endpoint (for example :8443); 0 disables it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	flag.IntVar(&webhookPort, "webhook-port", 9443, "Port of the webhook server.")
	flag.StringVar(&certDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "Directory of the webhook server's tls.crt and tls.key.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader through a Lease, so that only one replica reconciles.")
	flag.BoolVar(&development, "zap-devel", false, "Log human-readable console lines instead of JSON.")
	flag.Parse()

	log, _ := logging.New(development)
	ctrl.SetLogger(log)

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme.New(),
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
		WebhookServer:          crwebhook.NewServer(crwebhook.Options{Port: webhookPort, CertDir: certDir}),
		LeaderElection:         leaderElect,
		LeaderElectionID:       "myoperator.example.com",
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if err := webhook.Setup(mgr); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	log.Info("starting manager")
	return mgr.Start(ctrl.SetupSignalHandler())
}

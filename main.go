// Command manager runs the myoperator controller manager: the webhooks that
// convert, default and validate the project's APIs (with certificates it
// manages itself), the storage-version migration and the reconcilers.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
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
	"github.com/example/myoperator/internal/managerflags"
	"github.com/example/myoperator/internal/memlimit"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/internal/version"
	"github.com/example/myoperator/internal/webhookguard"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		os.Exit(1)
	}
}

func run() error {
	var f managerflags.Flags
	f.Register(flag.CommandLine)
	flag.Parse()
	if f.ShowVersion {
		fmt.Println(version.String())
		return nil
	}
	o, err := f.Options()
	if err != nil {
		return err
	}
	// The default follows the install's manifests, not the binary: make
	// release-push points them at the registry the images went to, which
	// no binary built before the push can know. It is set once, before
	// anything reads it.
	operatorv1alpha1.DefaultGuestbookImage = f.GuestbookImage

	log, level := logging.New(f.Development)
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
	if o.WebhookLimits.BufferBytes == 0 {
		o.WebhookLimits.BufferBytes = webhookguard.BufferFor(memlimit.Container())
	}
	log.Info("webhook bounds", "maxRequestsInFlight", o.WebhookLimits.MaxInFlight, "maxBufferedBytes", o.WebhookLimits.BufferBytes)
	cfg := ctrl.GetConfigOrDie()
	cfg.QPS, cfg.Burst = float32(f.QPS), f.Burst
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

// Command bootstrap is the manager's initContainer: it waits for the
// OperatorConfig CRD, creates the default OperatorConfig "cluster" when it is
// absent and exits 0. Of an existing OperatorConfig it changes one thing:
// the defaults an earlier release wrote into its spec, which it removes and
// records in an annotation and an event (bootstrap/release.go); what a user
// set stays.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/example/myoperator/bootstrap"
	"github.com/example/myoperator/internal/logging"
	"github.com/example/myoperator/internal/scheme"
	"github.com/example/myoperator/internal/version"
)

func main() {
	os.Exit(run())
}

func run() int {
	var (
		timeout     time.Duration
		interval    time.Duration
		development bool
	)
	// --kubeconfig is registered by controller-runtime's config package: a
	// path to a kubeconfig, else $KUBECONFIG, else the in-cluster config.
	flag.DurationVar(&timeout, "timeout", 2*time.Minute, "How long to wait for the OperatorConfig CRD to be established.")
	flag.DurationVar(&interval, "interval", 2*time.Second, "How often to check the CRD and report progress.")
	showVersion := flag.Bool("version", false, "Print the version and exit.")
	flag.BoolVar(&development, "zap-devel", false, "Log human-readable console lines instead of JSON.")
	flag.Parse()
	if *showVersion {
		fmt.Println(version.String())
		return 0
	}

	log, _ := logging.New(development)
	log = log.WithName("bootstrap")
	// The first line says which build runs, for whoever reads the logs.
	log.Info(version.String())

	restCfg, err := config.GetConfig()
	if err != nil {
		log.Error(err, "no Kubernetes configuration")
		return 1
	}
	c, err := client.New(restCfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		log.Error(err, "creating the client")
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	steps := bootstrap.Steps(c, bootstrap.Options{Timeout: timeout, Interval: interval})
	if err := bootstrap.Run(ctx, log, steps); err != nil {
		log.Error(err, "bootstrap failed")
		fmt.Fprintln(os.Stderr, "bootstrap:", err)
		return 1
	}
	log.Info("bootstrap complete")
	return 0
}

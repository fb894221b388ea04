// Command kube-scheduler is the upstream kube-scheduler, built from Go modules so that the
// project's tests run against a pinned, real control plane without downloads.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}

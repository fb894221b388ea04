// Command kube-apiserver is the upstream kube-apiserver, built from Go modules so that the
// project's tests run against a pinned, real control plane without downloads.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}

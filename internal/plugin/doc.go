// Package plugin is what the subcommands of kubectl myoperator share: the
// flags that choose the cluster (--kubeconfig, --context, -n), a client
// with the operator's scheme, and the names and settings of the operator's
// installation read from the cluster (the manager Deployment's arguments).
package plugin

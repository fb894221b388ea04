// Package testenv starts a real control plane (the project-built etcd and
// kube-apiserver, through envtest) with the project's CRDs and webhook
// configurations installed exactly as kustomize renders them from config/.
package testenv

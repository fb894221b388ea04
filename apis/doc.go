// Package apis holds the project's API groups, one package per group and
// version: example.com Drink (v1alpha1, v1beta1, v1), webapp.my.domain
// Guestbook (v1) and operator.example.com OperatorConfig (v1alpha1). Its own
// tests show the generated CRDs enforced by a real kube-apiserver.
package apis

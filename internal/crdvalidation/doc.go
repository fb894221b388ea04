// Package crdvalidation checks objects against the OpenAPI schema and the
// x-kubernetes-validations (CEL) rules of a version of a generated CRD, with
// the API server's own validation packages, so that a webhook enforces the
// same rules as the API server without a hand-written copy of them.
package crdvalidation

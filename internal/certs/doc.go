// Package certs serves the webhook certificate from the Secret that holds
// it, read through the API: the one the manager's own rotator keeps, or the
// one cert-manager issues. With the rotator it also writes the pair into
// the webhook server's certificate directory, where the rotator checks it.
package certs

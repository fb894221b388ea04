// Package certs materializes the webhook serving certificate, which the
// certificate rotator keeps in a Secret, as files in the webhook server's
// certificate directory.
package certs

// Package webhook registers the manager's webhooks: Drink conversion between
// every served version, and the typed defaulting and validating webhooks.
package webhook

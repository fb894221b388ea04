// Package leaderlock is the manager's Lease lock: controller-runtime's own
// (the same client timeout, user agent and "became leader" events) with a
// holder identity that names the pod, and a release that does not wait for
// the webhook drain.
//
// controller-runtime releases the Lease only after every runnable has
// stopped, the webhook server last; the webhook server drains for
// --webhook-drain-period (3 s) before it stops, so a SIGTERM handed the
// Lease over no sooner than that, although nothing that needs the Lease
// was running any more. Releaser releases it as soon as the reconcilers
// have stopped, while the webhooks still drain.
package leaderlock

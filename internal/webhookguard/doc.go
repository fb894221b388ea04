// Package webhookguard bounds what a caller of the webhook port can make a
// replica hold: requests in flight per endpoint, request bytes held across
// every endpoint, and the time a request's body may take to arrive and its
// answer to leave.
//
// The port answers anyone who can reach it (any pod, unless a
// NetworkPolicy says otherwise), and the webhooks fail closed: a replica
// that runs out of memory stops every Drink write and conversion in the
// cluster. Beyond a bound a request is answered 429 with Retry-After,
// which the API server's webhook client retries with back-off within its
// call's timeout, so a short burst costs a real write some latency, not an
// error.
package webhookguard

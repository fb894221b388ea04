// Package webhookdrain lets the webhook server stop without failing a
// request of the API server. The API server keeps its connections to a
// webhook open and reuses them (HTTP/2: one connection for every call);
// when a stopping pod closes an idle one just as the API server sends a
// request on it, the request fails with EOF, and the API server does not
// retry a POST. So before the server stops, it drains: for a period every
// response says "Connection: close" (over HTTP/2, Go's server sends a
// GOAWAY for it instead), which makes the API server open its next
// connection through the Service, to a pod that keeps running.
package webhookdrain

package webhookguard

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The reasons a request is refused, the values of refused's reason label.
const (
	reasonInFlight = "in-flight" // MaxInFlight requests to the path already
	reasonBytes    = "bytes"     // BufferBytes held already (429)
	reasonTooLarge = "too-large" // a whole body past 7 MiB (413)
	reasonRead     = "read"      // the body did not arrive whole in ReadTimeout
)

var reasons = []string{reasonInFlight, reasonBytes, reasonTooLarge, reasonRead}

// refused counts the requests the guard refused. The API server's calls
// meet it only under a burst it retries; a count that keeps rising is a
// caller that is not the API server, or a replica too small for its
// traffic.
var refused = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "myoperator_webhook_requests_refused_total",
	Help: "Webhook requests refused by the server's bounds, by path and reason (in-flight, bytes: 429; too-large: 413; read: the body did not arrive in time).",
}, []string{"path", "reason"})

func init() { metrics.Registry.MustRegister(refused) }

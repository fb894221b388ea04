package certs

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// expiry is the NotAfter of the serving certificate this replica serves,
// so that an alert can fire when renewal failed (whoever issues it: the
// operator's rotator or cert-manager) well before the API server meets an
// expired certificate.
var expiry = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "myoperator_webhook_certificate_expiry_timestamp_seconds",
	Help: "Expiry (NotAfter, Unix time) of the webhook serving certificate this replica serves.",
})

func init() {
	metrics.Registry.MustRegister(expiry)
}

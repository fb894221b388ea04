package webhook

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	drinksversions "github.com/example/myoperator/apis/drinks/versions"
)

// deprecatedWrites counts the writes admitted through a deprecated API
// version, so that an admin sees that clients still use it before that
// version stops being served (docs/VERSION-LIFECYCLE.md). Which clients:
// the API server's apiserver_requested_deprecated_apis metric and the
// k8s.io/deprecated audit annotation name them.
var deprecatedWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "myoperator_deprecated_version_writes_total",
	Help: "Creates and updates admitted through a deprecated API version, by kind and version.",
}, []string{"kind", "version"})

// configReadFallbacks counts the Drink admissions whose OperatorConfig
// read from the API server failed, so that the default size came from the
// manager's cache (liveConfigReader).
var configReadFallbacks = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "myoperator_webhook_config_cache_fallbacks_total",
	Help: "Drink admissions that defaulted from the cached OperatorConfig because reading it from the API server failed.",
})

// refusedConversions counts the conversion requests answered with an HTTP
// error before any object was converted: 413 for a review or a value
// beyond the bounds (ConversionLimits), 400 for one that does not parse or
// sends objects before its uid, 408 for one whose body did not arrive in
// time (internal/webhookguard's read timeout).
// The API server sends neither; a rising count is a client that is not it.
var refusedConversions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "myoperator_conversion_requests_refused_total",
	Help: "Conversion requests refused before any object was converted, by HTTP status code (413: beyond the size bounds; 400: malformed; 408: the body did not arrive in time).",
}, []string{"code"})

func init() {
	metrics.Registry.MustRegister(deprecatedWrites, configReadFallbacks, refusedConversions)
	// The series exists at 0 before the first such write, so that
	// increase() over it sees that write.
	for _, v := range drinksversions.Drinks {
		if v.Served && v.Deprecated {
			deprecatedWrites.WithLabelValues("Drink", v.Name)
		}
	}
	// The codes refuse answers with (convert.go), likewise at 0.
	for _, code := range []int{http.StatusRequestEntityTooLarge, http.StatusBadRequest, http.StatusRequestTimeout} {
		refusedConversions.WithLabelValues(strconv.Itoa(code))
	}
}

//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/myoperator/test/bench"
	"github.com/example/myoperator/test/framework/drinkload"
)

// startLoad creates namespace ns (if needed) and starts the load of
// test/framework/drinkload there: writes through every served version and
// v1alpha1 lists, never retried, each failure counted.
func startLoad(ctx context.Context, t *testing.T, ns string) *drinkload.Load {
	t.Helper()
	if err := kc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("namespace %s: %v", ns, err)
	}
	// The suite's client without the API server's deprecation warnings
	// (every v1alpha1 and v1beta1 request has some), which would flood the
	// log.
	rc := rest.CopyConfig(restConfig)
	rc.WarningHandler = rest.NoWarnings{}
	c, err := client.New(rc, client.Options{Scheme: kc.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return drinkload.Start(c, ns)
}

// webhookErrorCounts are the API server's own counters of failed calls to
// admission and conversion webhooks, keyed by metric and labels, so that
// what the load client saw is cross-checked by what the API server saw.
type webhookErrorCounts map[string]float64

// Total sums every counter.
func (w webhookErrorCounts) Total() float64 {
	var t float64
	for _, v := range w {
		t += v
	}
	return t
}

// Sub is w minus an earlier reading, keeping only counters that grew.
func (w webhookErrorCounts) Sub(before webhookErrorCounts) webhookErrorCounts {
	out := webhookErrorCounts{}
	for k, v := range w {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

func (w webhookErrorCounts) String() string {
	if len(w) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(w)) {
		parts = append(parts, fmt.Sprintf("%s %g", k, w[k]))
	}
	return strings.Join(parts, "; ")
}

// webhookErrorSeries says which series of the API server's /metrics count
// a failed webhook call: an admission webhook that could not be called
// (or answered garbage), one that failed open, and a conversion webhook
// that failed for any reason.
func webhookErrorSeries(s bench.Sample) bool {
	switch s.Name {
	case "apiserver_admission_webhook_rejection_count":
		return s.Labels["error_type"] == "calling_webhook_error" || s.Labels["error_type"] == "apiserver_internal_error"
	case "apiserver_admission_webhook_fail_open_count":
		return true
	case "apiserver_conversion_webhook_request_total":
		return s.Labels["result"] == "failure"
	case "apiserver_crd_conversion_webhook_duration_seconds_count":
		return s.Labels["succeeded"] == "false"
	}
	return false
}

// apiserverWebhookErrors reads the API server's webhook error counters
// (parsed by the bench's Prometheus text parser).
func apiserverWebhookErrors(ctx context.Context) (webhookErrorCounts, error) {
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("API server /metrics: %w", err)
	}
	samples, err := bench.ParseMetrics(string(body))
	if err != nil {
		return nil, err
	}
	out := webhookErrorCounts{}
	for _, s := range samples {
		if !webhookErrorSeries(s) {
			continue
		}
		var labels []string
		for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
			labels = append(labels, fmt.Sprintf("%s=%q", k, s.Labels[k]))
		}
		out[s.Name+"{"+strings.Join(labels, ",")+"}"] = s.Value
	}
	return out, nil
}

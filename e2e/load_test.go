//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
	drinksv1beta1 "github.com/example/myoperator/apis/drinks/v1beta1"
	"github.com/example/myoperator/test/bench"
)

// loadDrinksPerVersion bounds how many Drinks each version's worker
// creates; after that it only edits and reads them.
const loadDrinksPerVersion = 15

// loadClient keeps writing Drinks through every served version while an
// upgrade, a rollback or a certificate renewal happens: one worker per
// version creates Drinks, then edits them with merge patches (no
// resourceVersion, so the operator's own status writes cause no conflict)
// and reads each back through another version. Every request passes the
// mutating and validating webhooks or the conversion webhook, or both. It
// never retries: a request that fails is counted and its error kept, so
// a webhook endpoint that is gone for a moment shows as a failure.
type loadClient struct {
	// c is the suite's client without the API server's deprecation
	// warnings (every v1alpha1 and v1beta1 write has some), which would
	// flood the log.
	c      client.Client
	ns     string
	cancel context.CancelFunc
	wg     sync.WaitGroup
	start  time.Time

	mu     sync.Mutex
	report loadReport
}

// loadReport is what the load client saw.
type loadReport struct {
	Requests, Failures int
	// PerVersion counts requests and failures by the version written.
	PerVersion map[string][2]int
	// Errors are the first failures' messages, with their time.
	Errors   []string
	Duration time.Duration
}

func (r loadReport) String() string {
	var per []string
	for _, v := range slices.Sorted(maps.Keys(r.PerVersion)) {
		per = append(per, fmt.Sprintf("%s %d/%d", v, r.PerVersion[v][1], r.PerVersion[v][0]))
	}
	s := fmt.Sprintf("%d requests in %s, %d failed (failed/sent by version: %s)", r.Requests, r.Duration.Round(time.Millisecond), r.Failures, strings.Join(per, ", "))
	if len(r.Errors) > 0 {
		s += "; first failures:\n  " + strings.Join(r.Errors, "\n  ")
	}
	return s
}

// startLoad creates namespace ns (if needed) and starts the workers.
func startLoad(ctx context.Context, t *testing.T, ns string) *loadClient {
	t.Helper()
	if err := kc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("namespace %s: %v", ns, err)
	}
	rc := rest.CopyConfig(restConfig)
	rc.WarningHandler = rest.NoWarnings{}
	c, err := client.New(rc, client.Options{Scheme: kc.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	l := &loadClient{c: c, ns: ns, cancel: cancel, start: time.Now(), report: loadReport{PerVersion: map[string][2]int{}}}
	for _, v := range []string{"v1alpha1", "v1beta1", "v1"} {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.work(runCtx, v)
		}()
	}
	return l
}

// stop ends the workers and returns what they saw.
func (l *loadClient) stop() loadReport {
	l.cancel()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.report
	r.PerVersion = maps.Clone(l.report.PerVersion)
	r.Errors = slices.Clone(l.report.Errors)
	r.Duration = time.Since(l.start)
	return r
}

// count records one request's outcome; a request cut short by stop is not
// a request.
func (l *loadClient) count(ctx context.Context, version, what string, err error) {
	if err != nil && ctx.Err() != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.report.PerVersion[version]
	c[0]++
	l.report.Requests++
	if err != nil {
		c[1]++
		l.report.Failures++
		if len(l.report.Errors) < 10 {
			l.report.Errors = append(l.report.Errors, fmt.Sprintf("%s +%s %s through %s: %v",
				time.Now().Format("15:04:05.000"), time.Since(l.start).Round(time.Millisecond), what, version, err))
		}
	}
	l.report.PerVersion[version] = c
}

// work is one version's worker.
func (l *loadClient) work(ctx context.Context, version string) {
	readVia := map[string]string{"v1alpha1": "v1", "v1beta1": "v1alpha1", "v1": "v1beta1"}[version]
	created := 0
	for i := 0; ctx.Err() == nil; i++ {
		slot := i % loadDrinksPerVersion
		name := fmt.Sprintf("load-%s-%d", version, slot)
		if slot >= created {
			err := l.c.Create(ctx, loadDrink(version, l.ns, name, i))
			if err == nil || apierrors.IsAlreadyExists(err) {
				// Already there: a stop and a restart of the load in one
				// namespace; the create still passed the webhooks.
				created = slot + 1
				err = nil
			}
			l.count(ctx, version, "create "+name, err)
		} else {
			l.count(ctx, version, "patch "+name, l.c.Patch(ctx, loadDrink(version, l.ns, name, i), client.RawPatch(types.MergePatchType, loadPatch(version, i))))
		}
		got := emptyDrink(readVia)
		l.count(ctx, readVia, "get "+name, l.c.Get(ctx, client.ObjectKey{Namespace: l.ns, Name: name}, got))
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// loadDrink is a valid Drink of the version; i varies its content.
func loadDrink(version, ns, name string, i int) client.Object {
	meta := metav1.ObjectMeta{Namespace: ns, Name: name}
	switch version {
	case "v1alpha1":
		return &drinksv1alpha1.Drink{ObjectMeta: meta, Spec: drinksv1alpha1.DrinkSpec{Name: "Load", Drink: "tea"}}
	case "v1beta1":
		return &drinksv1beta1.Drink{ObjectMeta: meta, Spec: drinksv1beta1.DrinkSpec{Name: "Load", Drink: "coffee", Size: "Large", Sugar: int32(i % 5)}}
	default:
		return &drinksv1.Drink{ObjectMeta: meta, Spec: drinksv1.DrinkSpec{DisplayName: "Load", Beverage: "cocoa", Size: "Medium", SugarCubes: int32(i % 5)}}
	}
}

// loadPatch changes a field of the version's spec.
func loadPatch(version string, i int) []byte {
	switch version {
	case "v1alpha1":
		return fmt.Appendf(nil, `{"spec":{"name":"Load %d"}}`, i%7)
	case "v1beta1":
		return fmt.Appendf(nil, `{"spec":{"sugar":%d}}`, i%5)
	default:
		return fmt.Appendf(nil, `{"spec":{"sugarCubes":%d}}`, i%5)
	}
}

func emptyDrink(version string) client.Object {
	switch version {
	case "v1alpha1":
		return &drinksv1alpha1.Drink{}
	case "v1beta1":
		return &drinksv1beta1.Drink{}
	default:
		return &drinksv1.Drink{}
	}
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

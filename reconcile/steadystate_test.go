package reconcile_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/test/bench"
	"github.com/example/myoperator/test/framework/testenv"
)

// TestNoWritesAtSteadyState: after 100 Drinks and 3 Guestbooks converged,
// the API server counts no write request to any resource the operator
// touches during 60 seconds (from its apiserver_request_total metric). No
// other writer runs in this process then, so every counted write would be
// the manager's.
func TestNoWritesAtSteadyState(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 60 s")
	}
	ns := namespace(t)
	const drinks = 100
	for i := range drinks {
		d := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("steady-%d", i)},
			Spec: drinksv1.DrinkSpec{DisplayName: "D", Beverage: "tea", Extras: []string{"milk"}}}
		if err := k8s.Create(testCtx, d); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		g := &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("steady-%d", i)},
			Spec: webappv1.GuestbookSpec{Size: 1, ConfigMapName: fmt.Sprintf("steady-%d", i)}}
		if err := k8s.Create(testCtx, g); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(testCtx, g) })
		runPods(t, g)
	}
	start := time.Now()
	testenv.Eventually(t, 10*time.Second, func() string {
		list := &drinksv1.DrinkList{}
		if err := k8s.List(testCtx, list, client.InNamespace(ns)); err != nil {
			return err.Error()
		}
		ready := 0
		for _, d := range list.Items {
			if d.Status.ObservedGeneration == d.Generation && meta.IsStatusConditionTrue(d.Status.Conditions, drinksv1.ConditionReady) {
				ready++
			}
		}
		gbs := &webappv1.GuestbookList{}
		if err := k8s.List(testCtx, gbs); err != nil {
			return err.Error()
		}
		for _, g := range gbs.Items {
			if !meta.IsStatusConditionTrue(g.Status.Conditions, webappv1.ConditionReady) {
				return "Guestbook " + g.Name + " not Ready"
			}
		}
		if ready != drinks {
			return fmt.Sprintf("%d of %d Drinks Ready", ready, drinks)
		}
		return ""
	})
	t.Logf("100 Drinks and 3 Guestbooks converged in %s", time.Since(start).Round(time.Millisecond))
	// Let the last writes land before counting. The events recorder
	// (events.k8s.io) folds repeated events into series and PATCHes their
	// counts on a 30 s tick; those patches report what happened before the
	// window, so the window starts after one tick.
	time.Sleep(31 * time.Second)
	before := writeCounts(t)
	time.Sleep(60 * time.Second)
	after := writeCounts(t)
	var writes []string
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			writes = append(writes, fmt.Sprintf("%s: %.0f", k, d))
		}
	}
	slices.Sort(writes)
	t.Logf("write requests in the 60 s after convergence: %d kinds %v", len(writes), writes)
	if len(writes) > 0 {
		t.Errorf("the operator wrote at steady state: %v", writes)
	}
}

// operatorResources are every resource the operator reads or writes.
var operatorResources = []string{"drinks", "guestbooks", "operatorconfigs", "configmaps", "statefulsets",
	"services", "pods", "namespaces", "events", "secrets", "customresourcedefinitions"}

// writeCounts reads the API server's request counters of write verbs,
// keyed by "VERB resource/subresource", with the bench's parser of the
// Prometheus text format.
func writeCounts(t *testing.T) map[string]float64 {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(cfg)
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(testCtx)
	if err != nil {
		t.Fatal(err)
	}
	samples, err := bench.ParseMetrics(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	for _, s := range samples {
		if s.Name != "apiserver_request_total" {
			continue
		}
		switch s.Labels["verb"] {
		case "GET", "LIST", "WATCH", "WATCHLIST", "CONNECT":
			continue
		}
		if !slices.Contains(operatorResources, s.Labels["resource"]) {
			continue
		}
		counts[s.Labels["verb"]+" "+s.Labels["resource"]+"/"+s.Labels["subresource"]] += s.Value
	}
	if len(counts) == 0 {
		t.Fatalf("no apiserver_request_total write counters found in /metrics (%d bytes)", len(raw))
	}
	return counts
}

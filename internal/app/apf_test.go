package app_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/app"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/test/framework/manifests"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/framework/testutil"
	"github.com/example/myoperator/test/reliability"
)

const leaseName = "myoperator.example.com"

// apfDrinksCount is how many Drinks each phase of TestLeaseUnderAPFSqueeze
// creates: 1,000 in the long form (MYOPERATOR_LONG_FAULTS=1, make
// reliability), whose figures docs/RELIABILITY.md quotes, 400 in make
// test. 400 keep the protected phase squeezed across several renewals
// (its Lease is renewed every 3 s) and the unprotected one until a
// renewal is rejected, and cost make test less: see CONTRIBUTING.md.
func apfDrinksCount() int {
	if os.Getenv(longFaultsEnv) == "1" {
		return 1000
	}
	return 400
}

// TestLeaseUnderAPFSqueeze: an admin squeezes every request of the
// operator's ServiceAccount into a priority level of the smallest
// concurrency that rejects what it cannot run at once (429). The manager,
// with its ServiceAccount's token, config/rbac, leader election with short
// durations and no client-side rate limit (main's default), still
// converges 1,000 Drinks, and its retries show in its client metrics;
// with the shipped FlowSchemas (config/manager/flowschema.yaml) its Lease
// renewals go to the leader-election level, none is rejected and the
// Lease is never lost, and the Drink defaulting webhook's read of the
// OperatorConfig (made while the API server waits on the webhook) goes to
// workload-high and never falls back to the cache. Then the shipped
// FlowSchemas are removed and 1,000 more Drinks are created: the renewals
// now share the squeezed level and are rejected, which is what the
// FlowSchema prevents.
func TestLeaseUnderAPFSqueeze(t *testing.T) {
	apfDrinks := apfDrinksCount()
	env, cfg, admin := testenv.Start(t, testenv.Options{Webhooks: true, WebhookHost: "localhost"})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cs := kubernetes.NewForConfigOrDie(cfg)
	saCfg := installOperator(ctx, t, cfg, admin, "protected", "unprotected")
	shipped, admissionReads := installShippedFlowSchemas(ctx, t, admin)
	squeeze := installSqueeze(ctx, t, cs)
	// Every FlowSchema is in force: a Lease read of the ServiceAccount is
	// classified by the shipped one, an OperatorConfig read by the other
	// shipped one, a ConfigMap read by the squeeze.
	waitClassified(ctx, t, saCfg, "/apis/coordination.k8s.io/v1/namespaces/"+operatorNS+"/leases/"+leaseName, shipped)
	waitClassified(ctx, t, saCfg, "/apis/operator.example.com/v1alpha1/operatorconfigs/"+operatorv1alpha1.SingletonName, admissionReads)
	waitClassified(ctx, t, saCfg, "/api/v1/namespaces/"+operatorNS+"/configmaps", squeeze)

	metricsAddr := testutil.FreeAddr(t, env.WebhookInstallOptions.LocalServingPort)
	run, w := startLeader(ctx, t, env, saCfg, metricsAddr)

	// Drinks are admitted once the manager has injected its webhooks' CA
	// (a dry run writes nothing).
	testenv.Eventually(t, 60*time.Second, func() string {
		d := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "protected", Name: "probe"},
			Spec: drinksv1.DrinkSpec{DisplayName: "Probe", Beverage: "tea"}}
		if err := admin.Create(ctx, d, client.DryRunAll); err != nil {
			return "no Drink admitted yet: " + err.Error()
		}
		return ""
	})

	// Protected: the shipped FlowSchema is installed.
	start := time.Now()
	before, apiBefore := scrapePlain(ctx, t, metricsAddr), apiserverMetrics(ctx, t, cs)
	leaseBefore := w.snapshot()
	errs, retried := createDrinksRetrying(ctx, admin, "protected", apfDrinks, true)
	if len(errs) > 0 {
		t.Fatalf("creating Drinks in protected: %d failed (%d timed out calling a webhook at first), the first: %v", len(errs), retried, errs[0])
	}
	// A few webhook calls time out on a busy machine; many would mean the
	// webhooks are starved by the squeeze itself.
	if retried > apfDrinks/20 {
		t.Fatalf("creating Drinks in protected: %d of %d creates timed out calling a webhook (at most %d may)", retried, apfDrinks, apfDrinks/20)
	}
	if retried > 0 {
		t.Logf("creating Drinks in protected: %d of %d creates timed out calling a webhook and were sent again", retried, apfDrinks)
	}
	converged, lost := waitConverged(ctx, t, admin, "protected", apfDrinks, run, 180*time.Second)
	if lost != nil {
		t.Fatalf("the manager stopped under the squeeze with the shipped FlowSchema: %v", lost)
	}
	if !converged {
		t.Fatalf("%d Drinks not Ready with their ConfigMaps within 180s", apfDrinks)
	}
	took := time.Since(start)
	after, apiAfter := scrapePlain(ctx, t, metricsAddr), apiserverMetrics(ctx, t, cs)
	leaseAfter := w.snapshot()
	got429 := sum(after, "rest_client_requests_total", map[string]string{"code": "429"}) - sum(before, "rest_client_requests_total", map[string]string{"code": "429"})
	fallbacks := sum(after, "myoperator_webhook_config_cache_fallbacks_total", nil) - sum(before, "myoperator_webhook_config_cache_fallbacks_total", nil)
	rejected := sum(apiAfter, "apiserver_flowcontrol_rejected_requests_total", map[string]string{"flow_schema": squeeze.Name}) -
		sum(apiBefore, "apiserver_flowcontrol_rejected_requests_total", map[string]string{"flow_schema": squeeze.Name})
	leaseRejected := leaseRejections(apiAfter) - leaseRejections(apiBefore)
	t.Logf("seats (API server's nominal limit): squeeze %v, leader-election %v",
		gauge(apiAfter, "apiserver_flowcontrol_nominal_limit_seats", map[string]string{"priority_level": "squeeze"}),
		gauge(apiAfter, "apiserver_flowcontrol_nominal_limit_seats", map[string]string{"priority_level": "leader-election"}))
	t.Logf("with the shipped FlowSchema: %d Drinks Ready with their ConfigMaps in %s; the manager got %v 429s "+
		"(API server: %v requests of the squeeze rejected, %v of them on leases); Lease renewed %d times, "+
		"longest gap between renewals %s, holder changes %d, leaseTransitions %d -> %d",
		apfDrinks, took.Round(100*time.Millisecond), got429, rejected, leaseRejected,
		leaseAfter.renewals-leaseBefore.renewals, leaseAfter.maxGap.Round(100*time.Millisecond),
		leaseAfter.holderChanges, leaseBefore.transitions, leaseAfter.transitions)
	if got429 == 0 {
		t.Errorf("the manager got no 429: the squeeze squeezed nothing")
	}
	if leaseRejected != 0 {
		t.Errorf("%v Lease requests rejected with the shipped FlowSchema, want 0", leaseRejected)
	}
	// Every one of the Drinks was created without a size, so each admission
	// read the OperatorConfig from the API server.
	t.Logf("the Drink defaulter's OperatorConfig reads that fell back to the cache: %v", fallbacks)
	if fallbacks != 0 {
		t.Errorf("%v OperatorConfig reads of the Drink defaulter failed under the squeeze with the shipped FlowSchemas, want 0", fallbacks)
	}
	if leaseAfter.holderChanges != 0 || leaseAfter.transitions != leaseBefore.transitions {
		t.Errorf("the Lease changed hands under the squeeze with the shipped FlowSchema: %d holder changes, leaseTransitions %d -> %d",
			leaseAfter.holderChanges, leaseBefore.transitions, leaseAfter.transitions)
	}
	if leaseAfter.renewals == leaseBefore.renewals || leaseAfter.maxGap >= squeezedLease {
		t.Errorf("renewals under the squeeze: %d, longest gap %s (lease %s)", leaseAfter.renewals-leaseBefore.renewals, leaseAfter.maxGap, squeezedLease)
	}

	// Unprotected: the shipped FlowSchemas removed, the renewals share the
	// squeezed level with everything else the manager sends.
	for _, fs := range []client.Object{shipped, admissionReads} {
		if err := admin.Delete(ctx, fs); err != nil {
			t.Fatal(err)
		}
	}
	waitClassified(ctx, t, saCfg, "/apis/coordination.k8s.io/v1/namespaces/"+operatorNS+"/leases/"+leaseName, squeeze)
	w.resetGap()
	start = time.Now()
	// Here the manager may lose its Lease while the Drinks are created, and
	// stop, webhooks and all (what the shipped FlowSchema prevents): the
	// creates it no longer admits are refused, which is this phase's
	// outcome, not a failure of the test.
	errs = createDrinks(ctx, admin, "unprotected", apfDrinks)
	if len(errs) > 0 {
		select {
		case <-run.done:
			t.Logf("%d of %d creates refused after the manager stopped, the first: %v", len(errs), apfDrinks, errs[0])
		case <-time.After(30 * time.Second):
			t.Fatalf("creating Drinks in unprotected: %d failed while the manager still ran, the first: %v", len(errs), errs[0])
		}
	}
	// What this phase shows is a rejected renewal: it ends at the first
	// one (or when the manager stops, or the Drinks converge without one,
	// which fails below) rather than waiting out the Drinks (1,000 of them
	// took from 6 s to 106 s more, depending on whether the Lease was lost).
	unprotectedRejected, converged, lost := waitLeaseRejected(ctx, t, admin, cs, leaseRejections(apiAfter), run, apfDrinks, 180*time.Second)
	leaseEnd := w.snapshot()
	unprotectedTook := time.Since(start)
	outcome := fmt.Sprintf("a Lease request rejected after %s", unprotectedTook.Round(100*time.Millisecond))
	switch {
	case lost != nil:
		outcome = fmt.Sprintf("the manager stopped after %s (%v)", unprotectedTook.Round(100*time.Millisecond), lost)
	case converged:
		outcome = fmt.Sprintf("%d Drinks converged in %s", apfDrinks, unprotectedTook.Round(100*time.Millisecond))
	}
	t.Logf("without the shipped FlowSchema: %s; %v Lease requests rejected; Lease renewed %d times, longest gap between renewals %s, "+
		"leader lost: %v",
		outcome, unprotectedRejected, leaseEnd.renewals-leaseAfter.renewals, leaseEnd.maxGap.Round(100*time.Millisecond), lost != nil)
	if unprotectedRejected == 0 {
		t.Errorf("no Lease request rejected without the shipped FlowSchema: the test does not show what it protects")
	}
	reliability.Save(t, map[string]any{
		"drinks":                       apfDrinks,
		"readySeconds":                 reliability.Seconds(took),
		"responses429":                 int(got429),
		"squeezeRejected":              int(rejected),
		"leaseRejected":                int(leaseRejected),
		"renewals":                     leaseAfter.renewals - leaseBefore.renewals,
		"longestGapSeconds":            reliability.Seconds(leaseAfter.maxGap),
		"holderChanges":                leaseAfter.holderChanges,
		"leaderTransitions":            int(leaseAfter.transitions - leaseBefore.transitions),
		"configCacheFallbacks":         int(fallbacks),
		"unprotectedLeaderLost":        lost != nil,
		"unprotectedConverged":         converged,
		"unprotectedSeconds":           reliability.Seconds(unprotectedTook),
		"unprotectedLeaseRejected":     int(unprotectedRejected),
		"unprotectedCreatesRefused":    len(errs),
		"unprotectedRenewals":          leaseEnd.renewals - leaseAfter.renewals,
		"unprotectedLongestGapSeconds": reliability.Seconds(leaseEnd.maxGap),
	})
}

// installShippedFlowSchemas installs the FlowSchemas config/manager ships
// and returns the one for the Lease and the one for the admission reads.
// The leader election durations of the tests that squeeze the API server:
// short, so that a renewal that waits shows within seconds.
const (
	squeezedLease, squeezedRenew, squeezedRetry = 4 * time.Second, 3 * time.Second, time.Second
)

// installOperator installs what the manager needs to run with its own
// ServiceAccount (its namespace and the operand one, namespaces more, the
// empty certificate Secret, the OperatorConfig, config/rbac) and returns
// a config with the ServiceAccount's token and, as main runs by default,
// no client-side rate limit: fairness is the API server's.
func installOperator(ctx context.Context, t *testing.T, cfg *rest.Config, admin client.Client, namespaces ...string) *rest.Config {
	t.Helper()
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNS}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.DefaultGuestbookNamespace}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: names.CertSecret}},
		&operatorv1alpha1.OperatorConfig{ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName}},
	}
	for _, ns := range namespaces {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	for _, o := range objs {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	installRBAC(ctx, t, admin)
	tr, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ServiceAccounts(operatorNS).CreateToken(ctx, names.ServiceAccount,
		&authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &rest.Config{Host: cfg.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}, QPS: -1}
}

// startLeader runs the manager with saCfg, leader election of the squeezed
// durations and its own certificates, on envtest's webhook port, and
// returns once it holds the Lease, with the watch of the Lease.
func startLeader(ctx context.Context, t *testing.T, env *envtest.Environment, saCfg *rest.Config, metricsAddr string) (*managerRun, *leaseWatch) {
	t.Helper()
	wo := env.WebhookInstallOptions
	mgr, err := app.New(saCfg, app.InProcess(app.Options{
		Namespace: operatorNS, MetricsAddr: metricsAddr, ProbeAddr: "0",
		WebhookHost: "127.0.0.1", WebhookPort: wo.LocalServingPort, CertDir: t.TempDir(),
		Certs:          &app.CertOptions{ExtraDNSNames: []string{"localhost"}},
		LeaderElection: true, LeaseDuration: squeezedLease, RenewDeadline: squeezedRenew, RetryPeriod: squeezedRetry,
		MaxConcurrentReconciles: 16, // main's default
	}))
	if err != nil {
		t.Fatal(err)
	}
	run := startManager(ctx, mgr)
	w := watchLease(ctx, t, kubernetes.NewForConfigOrDie(env.Config))
	testenv.Eventually(t, 60*time.Second, func() string {
		if w.snapshot().holder == "" {
			return "no Lease held"
		}
		return ""
	})
	return run, w
}

func installShippedFlowSchemas(ctx context.Context, t *testing.T, admin client.Client) (lease, admissionReads client.Object) {
	t.Helper()
	objs, err := manifests.Render("config/manager")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]client.Object{}
	for _, fs := range manifests.OfKind(objs, "FlowSchema") {
		if err := admin.Create(ctx, fs); err != nil {
			t.Fatal(err)
		}
		byName[fs.GetName()] = fs
	}
	lease, admissionReads = byName["myoperator-leader-election"], byName["myoperator-admission-reads"]
	if len(byName) != 2 || lease == nil || admissionReads == nil {
		t.Fatalf("config/manager renders the FlowSchemas %v, want myoperator-leader-election and myoperator-admission-reads", slices.Sorted(maps.Keys(byName)))
	}
	return lease, admissionReads
}

// installSqueeze creates a priority level of the smallest concurrency
// (one seat, borrowing none) that rejects at once what it cannot run, and
// a FlowSchema that sends every request of the operator's ServiceAccount
// there. It takes precedence over the built-in FlowSchemas
// (service-accounts, 9000) and not over the shipped one (150).
func installSqueeze(ctx context.Context, t *testing.T, cs kubernetes.Interface) *flowcontrolv1.FlowSchema {
	t.Helper()
	// The API server divides its seats (600 in envtest) among the levels
	// by their shares, and rounds up: one share of the built-in 245 is 3
	// seats. A ballast level that no FlowSchema uses takes 2,000 shares, so
	// that the squeeze's one share is one seat (leader-election's 10 are
	// still 3).
	pl, ballast := rejectingLevel("squeeze", 1), rejectingLevel("ballast", 2000)
	for _, pl := range []*flowcontrolv1.PriorityLevelConfiguration{ballast, pl} {
		if _, err := cs.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, pl, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "squeeze-myoperator"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: pl.Name},
			MatchingPrecedence:         1000,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{
					Kind:           flowcontrolv1.SubjectKindServiceAccount,
					ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: operatorNS, Name: "myoperator-controller-manager"},
				}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{flowcontrolv1.VerbAll}, APIGroups: []string{flowcontrolv1.APIGroupAll},
					Resources: []string{flowcontrolv1.ResourceAll}, ClusterScope: true, Namespaces: []string{flowcontrolv1.NamespaceEvery},
				}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{
					Verbs: []string{flowcontrolv1.VerbAll}, NonResourceURLs: []string{flowcontrolv1.NonResourceAll},
				}},
			}},
		},
	}
	fs, err := cs.FlowcontrolV1().FlowSchemas().Create(ctx, fs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// waitClassified waits until a GET of path with cfg's credentials is
// classified by the FlowSchema want, as the API server says in its
// X-Kubernetes-PF-FlowSchema-UID response header (set also on a 429).
func waitClassified(ctx context.Context, t *testing.T, cfg *rest.Config, path string, want client.Object) {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() string {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+path, nil)
		resp, err := hc.Do(req)
		if err != nil {
			return err.Error()
		}
		_ = resp.Body.Close()
		if got := resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID); got != string(want.GetUID()) {
			return fmt.Sprintf("GET %s classified by FlowSchema %q, want %s (%s)", path, got, want.GetName(), want.GetUID())
		}
		return ""
	})
}

// leaseState is what leaseWatch saw of the manager's Lease.
type leaseState struct {
	holder        string
	holderChanges int
	transitions   int32
	// renewals counts the times renewTime moved; maxGap is the longest
	// time between two of them (since the last resetGap).
	renewals int
	maxGap   time.Duration
}

type leaseWatch struct {
	mu        sync.Mutex
	s         leaseState
	lastRenew time.Time
}

func (w *leaseWatch) snapshot() leaseState {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.s
}

func (w *leaseWatch) resetGap() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.s.maxGap = 0
}

func (w *leaseWatch) observe(l *coordinationv1.Lease) {
	w.mu.Lock()
	defer w.mu.Unlock()
	holder := ptr.Deref(l.Spec.HolderIdentity, "")
	if w.s.holder != "" && holder != w.s.holder {
		w.s.holderChanges++
	}
	w.s.holder = holder
	w.s.transitions = ptr.Deref(l.Spec.LeaseTransitions, 0)
	if l.Spec.RenewTime == nil || !l.Spec.RenewTime.After(w.lastRenew) {
		return
	}
	renewed := l.Spec.RenewTime.Time
	if !w.lastRenew.IsZero() {
		w.s.renewals++
		w.s.maxGap = max(w.s.maxGap, renewed.Sub(w.lastRenew))
	}
	w.lastRenew = renewed
}

// watchLease follows the manager's Lease as the admin (whom APF exempts)
// until ctx ends.
func watchLease(ctx context.Context, t *testing.T, cs kubernetes.Interface) *leaseWatch {
	t.Helper()
	w := &leaseWatch{}
	wi, err := cs.CoordinationV1().Leases(operatorNS).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", leaseName).String()})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer wi.Stop()
		for ev := range wi.ResultChan() {
			if l, ok := ev.Object.(*coordinationv1.Lease); ok {
				w.observe(l)
			}
		}
	}()
	return w
}

// createDrinks creates n Drinks through v1 in ns, as the admin, eight at
// a time, and returns the errors of the creates that failed.
func createDrinks(ctx context.Context, admin client.Client, ns string, n int) []error {
	errs, _ := createDrinksRetrying(ctx, admin, ns, n, false)
	return errs
}

// createDrinksRetrying is createDrinks, and with retry a create the API
// server gave up calling a webhook for (its timeout passed) is sent
// again, twice at most; it also returns how many were. On a machine whose
// cores the test shares with other suites, a few such calls time out on
// CPU alone. What
// this test asserts of the webhooks under the squeeze is that their read
// of the OperatorConfig is never rejected into the cache fallback
// (myoperator_webhook_config_cache_fallbacks_total), which a retry cannot
// hide.
func createDrinksRetrying(ctx context.Context, admin client.Client, ns string, n int, retry bool) ([]error, int) {
	var retried atomic.Int32
	errs := testenv.InParallel(n, 8, func(i int) error {
		create := func() error {
			d := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("d-%04d", i)},
				Spec: drinksv1.DrinkSpec{DisplayName: fmt.Sprintf("Drink %d", i), Beverage: "tea"}}
			return admin.Create(ctx, d)
		}
		err := create()
		if !retry || err == nil || !webhookTimedOut(err) {
			return err
		}
		// Sent again, twice at most: under make ci's load the machine
		// stalls for seconds at times, and one create in 30 met two
		// timeouts in a row (both 5 s). The bound on how many creates
		// time out at all stays with the caller.
		retried.Add(1)
		for attempt := 0; attempt < 2 && err != nil && webhookTimedOut(err); attempt++ {
			if err = create(); apierrors.IsAlreadyExists(err) {
				err = nil
			}
		}
		return err
	})
	return errs, int(retried.Load())
}

// webhookTimedOut tells whether the API server refused a write because a
// webhook call of its passed its timeout.
func webhookTimedOut(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "failed calling webhook") &&
		(strings.Contains(msg, "context deadline exceeded") || strings.Contains(msg, "Timeout") || strings.Contains(msg, "timeout"))
}

// managerRun is a manager started in the background: done is closed when
// its Start returns, with err.
type managerRun struct {
	done chan struct{}
	err  error
}

func startManager(ctx context.Context, mgr interface{ Start(context.Context) error }) *managerRun {
	r := &managerRun{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = mgr.Start(ctx)
	}()
	return r
}

// waitConverged waits until the n Drinks of ns are Ready for their
// generation with their ConfigMaps, the manager stops (its error), or
// timeout passes.
func waitConverged(ctx context.Context, t *testing.T, admin client.Client, ns string, n int, run *managerRun, timeout time.Duration) (bool, error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-run.done:
			return false, fmt.Errorf("manager stopped: %w", run.err)
		case <-time.After(time.Second):
		}
		drinks := &drinksv1.DrinkList{}
		cms := &corev1.ConfigMapList{}
		if err := admin.List(ctx, drinks, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if err := admin.List(ctx, cms, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		ready := 0
		for _, d := range drinks.Items {
			if c := meta.FindStatusCondition(d.Status.Conditions, drinksv1.ConditionReady); c != nil &&
				c.Status == metav1.ConditionTrue && c.ObservedGeneration == d.Generation {
				ready++
			}
		}
		owned := 0
		for _, cm := range cms.Items {
			if ref := metav1.GetControllerOf(&cm); ref != nil && ref.Kind == "Drink" && ref.Name == cm.Name {
				owned++
			}
		}
		if ready == n && owned == n {
			return true, nil
		}
	}
	return false, nil
}

// waitLeaseRejected waits until the API server has rejected a Lease
// request beyond the before already counted, the manager stops (its
// error), every Drink of the unprotected namespace converged, or timeout
// passes; it returns the rejections counted since before, whether the
// Drinks converged first, and the manager's error if it stopped.
func waitLeaseRejected(ctx context.Context, t *testing.T, admin client.Client, cs kubernetes.Interface, before float64, run *managerRun, drinks int, timeout time.Duration) (float64, bool, error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		rejected := leaseRejections(apiserverMetrics(ctx, t, cs)) - before
		if rejected > 0 || time.Now().After(deadline) {
			return rejected, false, nil
		}
		// A short wait for convergence doubles as the poll's pause.
		converged, lost := waitConverged(ctx, t, admin, "unprotected", drinks, run, time.Second)
		if lost != nil || converged {
			return leaseRejections(apiserverMetrics(ctx, t, cs)) - before, converged, lost
		}
	}
}

// scrapePlain reads the manager's /metrics over plain HTTP (SecureMetrics
// off: with it on, each scrape would itself ask the squeezed API server to
// authorize the caller).
func scrapePlain(ctx context.Context, t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	return parseMetrics(t, resp.Body)
}

// apiserverMetrics reads the API server's /metrics as the admin.
func apiserverMetrics(ctx context.Context, t *testing.T, cs kubernetes.Interface) map[string]*dto.MetricFamily {
	t.Helper()
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return parseMetrics(t, bytes.NewReader(raw))
}

func parseMetrics(t *testing.T, r io.Reader) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		t.Fatalf("parsing metrics: %v", err)
	}
	return families
}

// leaseRejections is how many Lease requests the API server rejected with
// 429 (APF rejections are request terminations); only the manager sends
// any that are not exempt.
func leaseRejections(families map[string]*dto.MetricFamily) float64 {
	return sum(families, "apiserver_request_terminations_total", map[string]string{"resource": "leases", "code": "429"})
}

// gauge is a gauge's value, 0 when the series is absent.
func gauge(families map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	return series(families, name, labels).GetGauge().GetValue()
}

// rejectingLevel is a priority level of shares that borrows and lends
// no seat and rejects (429) a request it has no seat for.
func rejectingLevel(name string, shares int32) *flowcontrolv1.PriorityLevelConfiguration {
	return &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To(shares),
				LendablePercent:          ptr.To[int32](0),
				BorrowingLimitPercent:    ptr.To[int32](0),
				LimitResponse:            flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
			},
		},
	}
}

// sum adds the counters of every series of name whose labels include
// labels.
func sum(families map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	total := 0.0
	for _, m := range families[name].GetMetric() {
		total += value(map[string]*dto.MetricFamily{name: {Metric: []*dto.Metric{m}}}, name, labels)
	}
	return total
}

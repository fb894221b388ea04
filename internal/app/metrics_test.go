package app_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
	drinksv1beta1 "github.com/example/myoperator/apis/drinks/v1beta1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/internal/app"
	"github.com/example/myoperator/internal/migrate"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/framework/testutil"
)

// TestManagedMetrics: every metric about what the operator manages, read
// from the secured endpoint as Prometheus reads it (a ServiceAccount token
// bound to myoperator-metrics-reader), each after the scenario that
// produces it: a storage migration caught halfway and refused once, Drinks
// written through each version, a name conflict, a ConfigMap edited by
// someone else, a Guestbook failover, an OperatorConfig made invalid behind
// its webhook's back. It prints every series with its value.
func TestManagedMetrics(t *testing.T) {
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	env, cfg, admin := testenv.Start(t, testenv.Options{Webhooks: true, WebhookHost: "localhost", AuditLog: auditLog})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	const legacy = 6
	previousRelease(t, env, admin, "legacy", legacy)
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "drinks"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.DefaultGuestbookNamespace}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: names.CertSecret}},
		&operatorv1alpha1.OperatorConfig{ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName}},
	} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	installRBAC(ctx, t, admin)
	// The migration is refused once (every Drink frozen), and caught after
	// its first page of two.
	freeze := freezeDrinks(t, admin)
	paused, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	wo := env.WebhookInstallOptions
	metricsAddr := testutil.FreeAddr(t, env.WebhookInstallOptions.LocalServingPort)
	mgr, err := app.New(cfg, app.WithMigrationTuning(app.Options{
		Namespace: operatorNS, MetricsAddr: metricsAddr, SecureMetrics: true, ProbeAddr: "0",
		WebhookHost: "127.0.0.1", WebhookPort: wo.LocalServingPort, CertDir: t.TempDir(),
		Certs:          &app.CertOptions{ExtraDNSNames: []string{"localhost"}},
		LeaderElection: true, LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second,
	}, func(m *migrate.Migrator) {
		m.PageSize = 2
		m.AfterPage = func(ctx context.Context, _ migrate.Page) {
			once.Do(func() {
				close(paused)
				select {
				case <-resume:
				case <-ctx.Done():
				}
			})
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	testenv.RunManager(ctx, t, mgr)
	scrape := metricsScraper(ctx, t, cfg, admin, metricsAddr)

	select {
	case <-paused:
	case <-time.After(60 * time.Second):
		t.Fatal("the storage migration did not list its first page within 60s")
	}
	before := scrape()
	checkValue(t, before, "myoperator_storage_migration_pending", nil, 1)
	checkValue(t, before, "myoperator_storage_migration_objects_remaining", nil, legacy-2)
	close(resume)
	testenv.Eventually(t, 30*time.Second, func() string {
		if v := value(scrape(), "myoperator_storage_migration_failed_attempts_total", nil); v < value(before, "myoperator_storage_migration_failed_attempts_total", nil)+1 {
			return fmt.Sprintf("failed attempts %v, want one more than before the frozen attempt", v)
		}
		return ""
	})
	if err := admin.Delete(ctx, freeze); err != nil {
		t.Fatal(err)
	}
	waitStoredV1(t, admin, 60*time.Second)

	// Drinks through each version; one whose ConfigMap name is taken.
	taken := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "drinks", Name: "taken"}, Data: map[string]string{"owner": "someone else"}}
	for _, o := range []client.Object{
		taken,
		&drinksv1beta1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "drinks", Name: "coffee"}, Spec: drinksv1beta1.DrinkSpec{Name: "Coffee", Drink: "coffee"}},
		&drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "drinks", Name: "cocoa"}, Spec: drinksv1.DrinkSpec{DisplayName: "Cocoa", Beverage: "cocoa"}},
		&drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "drinks", Name: "taken"}, Spec: drinksv1.DrinkSpec{DisplayName: "Taken", Beverage: "water"}},
	} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// tea is written in v1alpha1 by a client that names itself, as a
	// deployment tool would: the API server's metric and audit log show
	// who still uses the deprecated version (docs/monitoring.md's recipe).
	legacyCfg := rest.CopyConfig(cfg)
	legacyCfg.UserAgent = "legacy-deployer/1.0"
	legacyClient, err := client.New(legacyCfg, client.Options{Scheme: admin.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := legacyClient.Create(ctx, &drinksv1alpha1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "drinks", Name: "tea"},
		Spec: drinksv1alpha1.DrinkSpec{Name: "Tea", Drink: "tea"}}); err != nil {
		t.Fatal(err)
	}
	checkDeprecatedUseVisible(ctx, t, cfg, auditLog, legacyCfg.UserAgent)
	waitDrinksReady(t, admin, "drinks", "tea", "coffee", "cocoa")
	// Someone else edits tea's ConfigMap: a drift, put back.
	cm := &corev1.ConfigMap{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: "drinks", Name: "tea"}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["drink"] = "coffee"
	if err := admin.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	// A Guestbook of two pods whose active pod stops being Ready.
	gb := &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: "gb"}, Spec: webappv1.GuestbookSpec{Size: 2, ConfigMapName: "gb-config"}}
	if err := admin.Create(ctx, gb); err != nil {
		t.Fatal(err)
	}
	testenv.RunStatefulSetPods(ctx, t, admin, operatorv1alpha1.DefaultGuestbookNamespace, gb.Name)
	testenv.Eventually(t, 30*time.Second, func() string {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(gb), gb); err != nil || gb.Status.Active == "" {
			return fmt.Sprintf("no active pod yet (%v)", err)
		}
		return ""
	})
	testenv.SetPodReady(ctx, t, admin, operatorv1alpha1.DefaultGuestbookNamespace, gb.Status.Active, false)

	var after map[string]*dto.MetricFamily
	testenv.Eventually(t, 30*time.Second, func() string {
		after = scrape()
		for _, c := range []struct {
			name   string
			labels map[string]string
			delta  float64
		}{
			{"myoperator_operand_conflicts_total", map[string]string{"kind": "ConfigMap"}, 1},
			{"myoperator_drift_corrections_total", map[string]string{"kind": "ConfigMap"}, 1},
			{"myoperator_guestbook_failovers_total", nil, 1},
			{"myoperator_deprecated_version_writes_total", map[string]string{"kind": "Drink", "version": "v1alpha1"}, 1},
		} {
			if got := value(after, c.name, c.labels) - value(before, c.name, c.labels); got != c.delta {
				return fmt.Sprintf("%s%v rose by %v, want %v", c.name, c.labels, got, c.delta)
			}
		}
		for _, c := range []struct {
			version, ready string
			want           float64
		}{
			{"v1alpha1", "true", legacy + 1}, // the migrated Drinks and tea
			{"v1beta1", "true", 1},
			{"v1", "true", 1},
			{"v1", "false", 1}, // taken
			{"unknown", "true", 0},
		} {
			if got := value(after, "myoperator_drinks", map[string]string{"authored_version": c.version, "ready": c.ready}); got != c.want {
				return fmt.Sprintf("myoperator_drinks{%s,%s} = %v, want %v", c.version, c.ready, got, c.want)
			}
		}
		if got := value(after, "myoperator_guestbooks", map[string]string{"ready": "true"}) + value(after, "myoperator_guestbooks", map[string]string{"ready": "false"}); got != 1 {
			return fmt.Sprintf("myoperator_guestbooks: %v with a Ready condition, want 1", got)
		}
		if got := value(after, "myoperator_storage_migration_pending", nil); got != 0 {
			return fmt.Sprintf("myoperator_storage_migration_pending %v after the migration, want 0", got)
		}
		if got := value(after, "myoperator_storage_migration_objects_remaining", nil); got != 0 {
			return fmt.Sprintf("myoperator_storage_migration_objects_remaining %v after the migration, want 0", got)
		}
		return ""
	})
	// Each Drink reconcile of this scenario writes at most its ConfigMap and
	// its status, a conflict an event (not counted), so more than two
	// writes in one reconcile would be a fight with itself. The registry is
	// the process's: earlier tests' reconciles are in it too, so only what
	// this scenario added counts (client-go's retries of a throttled write
	// are writes sent, and a loaded test may have many).
	h0 := histogram(before, "myoperator_reconcile_writes", map[string]string{"controller": "drink"})
	h := histogram(after, "myoperator_reconcile_writes", map[string]string{"controller": "drink"})
	count, sum := h.GetSampleCount()-h0.GetSampleCount(), h.GetSampleSum()-h0.GetSampleSum()
	atMost2 := cumulative(h, 2) - cumulative(h0, 2)
	if count == 0 || sum < 2*(legacy+3) {
		t.Errorf("myoperator_reconcile_writes{controller=drink}: %d reconciles with %v writes in this scenario, want at least %d writes (ConfigMap and status of each Ready Drink)", count, sum, 2*(legacy+3))
	} else if atMost2 != count {
		t.Errorf("myoperator_reconcile_writes{controller=drink}: %d of this scenario's %d reconciles wrote more than twice", count-atMost2, count)
	}
	t.Logf("this scenario's Drink reconciles: %d, writes %v, each at most 2", count, sum)
	if exp := value(after, "myoperator_webhook_certificate_expiry_timestamp_seconds", nil); exp < float64(time.Now().Add(24*time.Hour).Unix()) {
		t.Errorf("webhook certificate expiry %v: not a fresh certificate's", time.Unix(int64(exp), 0))
	}

	// An OperatorConfig made invalid behind its webhook's back.
	dropWebhook(ctx, t, admin, "voperatorconfig.operator.example.com")
	oc := &operatorv1alpha1.OperatorConfig{}
	if err := admin.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, oc); err != nil {
		t.Fatal(err)
	}
	oc.Spec.Guestbook.Namespace = "kube-system"
	if err := admin.Update(ctx, oc); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() string {
		after = scrape()
		for state, want := range map[string]float64{"Accepted": 0, "Invalid": 1, "Missing": 0} {
			if got := value(after, "myoperator_config_state", map[string]string{"state": state}); got != want {
				return fmt.Sprintf("myoperator_config_state{state=%s} = %v, want %v", state, got, want)
			}
		}
		return ""
	})
	logMetrics(t, after, "myoperator_")
	checkMonitoringUsesExported(t, after)
	checkMetricConventions(t, after, "myoperator_")
}

// checkMetricConventions runs promtool check metrics, Prometheus's lint of
// names, units and help texts, on the families whose name has prefix.
// make test builds promtool and names it in PROMTOOL.
func checkMetricConventions(t *testing.T, families map[string]*dto.MetricFamily, prefix string) {
	t.Helper()
	promtool := os.Getenv("PROMTOOL")
	if promtool == "" {
		t.Log("PROMTOOL is not set (make test sets it): the metrics' names and help texts are not linted")
		return
	}
	var names []string
	for name := range families {
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var text bytes.Buffer
	enc := expfmt.NewEncoder(&text, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, name := range names {
		if err := enc.Encode(families[name]); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = &text
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics on %d families: %v\n%s", len(names), err, out)
	} else {
		t.Logf("promtool check metrics: %d families, no problem", len(names))
	}
}

// checkMonitoringUsesExported: every metric of the operator's that the
// alerts and the dashboard of config/prometheus read is one the manager
// exports (promtool's tests feed the rules series by name, so a renamed
// metric would pass them and never fire).
func checkMonitoringUsesExported(t *testing.T, families map[string]*dto.MetricFamily) {
	t.Helper()
	root, err := testutil.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`myoperator_[a-z_]+`)
	for _, f := range []string{"config/prometheus/alerts.yaml", "config/prometheus/dashboard.json"} {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, used := range name.FindAllString(string(data), -1) {
			base := used
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				if trimmed, ok := strings.CutSuffix(used, suffix); ok && families[trimmed].GetType() == dto.MetricType_HISTOGRAM {
					base = trimmed
				}
			}
			if families[base] == nil {
				t.Errorf("%s reads %s, which the manager does not export", f, used)
			}
		}
	}
}

// checkDeprecatedUseVisible: a write through example.com/v1alpha1 shows in
// the API server's apiserver_requested_deprecated_apis metric and, with the
// client's user agent, in an audit event annotated k8s.io/deprecated.
func checkDeprecatedUseVisible(ctx context.Context, t *testing.T, cfg *rest.Config, auditLog, userAgent string) {
	t.Helper()
	raw, err := kubernetes.NewForConfigOrDie(cfg).RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	checkValue(t, families, "apiserver_requested_deprecated_apis",
		map[string]string{"group": "example.com", "version": "v1alpha1", "resource": "drinks"}, 1)
	testenv.Eventually(t, 10*time.Second, func() string {
		data, err := os.ReadFile(auditLog)
		if err != nil {
			return err.Error()
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			var ev auditv1.Event
			if json.Unmarshal([]byte(line), &ev) != nil || ev.ObjectRef == nil {
				continue
			}
			if ev.ObjectRef.APIGroup == "example.com" && ev.ObjectRef.APIVersion == "v1alpha1" && ev.Verb == "create" &&
				ev.Annotations["k8s.io/deprecated"] == "true" && ev.UserAgent == userAgent {
				t.Logf("audit event: %s %s %s/%s by %s (%s), annotations %v", ev.Verb, ev.RequestURI,
					ev.ObjectRef.Namespace, ev.ObjectRef.Name, ev.User.Username, ev.UserAgent, ev.Annotations)
				return ""
			}
		}
		return "no audit event of the v1alpha1 create annotated k8s.io/deprecated with user agent " + userAgent
	})
}

// metricsScraper returns a func that reads /metrics over HTTPS with the
// token of a ServiceAccount bound to myoperator-metrics-reader, as a
// Prometheus in the cluster does.
func metricsScraper(ctx context.Context, t *testing.T, cfg *rest.Config, admin client.Client, addr string) func() map[string]*dto.MetricFamily {
	t.Helper()
	if err := admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: "prometheus"}}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "myoperator-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: operatorNS, Name: "prometheus"}},
	}); err != nil {
		t.Fatal(err)
	}
	tr, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ServiceAccounts(operatorNS).CreateToken(ctx, "prometheus", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// As config/prometheus's ServiceMonitor does: the endpoint's
	// certificate is verified against the CA the manager publishes in
	// names.CAConfigMap (not the Secret, which holds the keys), for the
	// metrics Service's name.
	return func() map[string]*dto.MetricFamily {
		t.Helper()
		var families map[string]*dto.MetricFamily
		testenv.Eventually(t, 30*time.Second, func() string {
			published := &corev1.ConfigMap{}
			if err := admin.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: names.CAConfigMap}, published); err != nil {
				return "the published CA: " + err.Error()
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM([]byte(published.Data["ca.crt"])) {
				return "no CA in ConfigMap " + names.CAConfigMap + " yet"
			}
			hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
				RootCAs: pool, ServerName: names.MetricsService + "." + operatorNS + ".svc", MinVersion: tls.VersionTLS12}}}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
			req.Header.Set("Authorization", "Bearer "+tr.Status.Token)
			resp, err := hc.Do(req)
			if err != nil {
				return err.Error()
			}
			defer func() { _ = resp.Body.Close() }()
			if resp.StatusCode != http.StatusOK {
				return fmt.Sprintf("/metrics answered %d", resp.StatusCode)
			}
			parser := expfmt.NewTextParser(model.UTF8Validation)
			families, err = parser.TextToMetricFamilies(resp.Body)
			if err != nil {
				return "parsing /metrics: " + err.Error()
			}
			return ""
		})
		return families
	}
}

// series returns the metric of the family name whose labels include
// labels, nil when there is none.
func series(families map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	f := families[name]
	if f == nil {
		return nil
	}
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range labels {
			match = match && have[k] == v
		}
		if match {
			return m
		}
	}
	return nil
}

// value is a counter's or gauge's value, 0 when the series is absent (a
// counter that never rose is not exported).
func value(families map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	m := series(families, name, labels)
	switch {
	case m == nil:
		return 0
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	default:
		return m.GetGauge().GetValue()
	}
}

func checkValue(t *testing.T, families map[string]*dto.MetricFamily, name string, labels map[string]string, want float64) {
	t.Helper()
	if series(families, name, labels) == nil {
		t.Errorf("%s%v: not exported", name, labels)
	} else if got := value(families, name, labels); got != want {
		t.Errorf("%s%v = %v, want %v", name, labels, got, want)
	}
}

// cumulative is the count of the histogram's bucket with upper bound le,
// 0 for a nil histogram.
func cumulative(h *dto.Histogram, le float64) uint64 {
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == le {
			return b.GetCumulativeCount()
		}
	}
	return 0
}

func histogram(families map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Histogram {
	if m := series(families, name, labels); m != nil {
		return m.GetHistogram()
	}
	return nil
}

// logMetrics prints every series of the families whose name has prefix.
func logMetrics(t *testing.T, families map[string]*dto.MetricFamily, prefix string) {
	t.Helper()
	var lines []string
	for name, f := range families {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			v := ""
			switch {
			case m.GetCounter() != nil:
				v = fmt.Sprint(m.GetCounter().GetValue())
			case m.GetGauge() != nil:
				v = fmt.Sprint(m.GetGauge().GetValue())
			case m.GetHistogram() != nil:
				v = fmt.Sprintf("count %d sum %v", m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum())
			}
			lines = append(lines, fmt.Sprintf("%s{%s} %s", name, strings.Join(labels, ","), v))
		}
	}
	sort.Strings(lines)
	t.Logf("%d series:\n%s", len(lines), strings.Join(lines, "\n"))
}

// waitDrinksReady waits until each named Drink in ns is Ready.
func waitDrinksReady(t *testing.T, c client.Client, ns string, names ...string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() string {
		for _, n := range names {
			d := &drinksv1.Drink{}
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: n}, d); err != nil {
				return err.Error()
			}
			if !meta.IsStatusConditionTrue(d.Status.Conditions, drinksv1.ConditionReady) {
				return n + " not Ready"
			}
		}
		return ""
	})
}

// dropWebhook removes the named webhook from the validating configuration,
// as an admin who bypasses it would.
func dropWebhook(ctx context.Context, t *testing.T, c client.Client, name string) {
	t.Helper()
	list := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	if err := c.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		v := &list.Items[i]
		kept := slices.DeleteFunc(slices.Clone(v.Webhooks), func(w admissionregistrationv1.ValidatingWebhook) bool { return w.Name == name })
		if len(kept) == len(v.Webhooks) {
			continue
		}
		v.Webhooks = kept
		if err := c.Update(ctx, v); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no validating webhook %s", name)
}

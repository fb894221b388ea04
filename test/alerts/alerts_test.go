package alerts_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/test/framework/manifests"
	"github.com/example/myoperator/test/framework/testutil"
)

const (
	component   = "config/prometheus"
	testsDir    = "config/prometheus/tests"
	runbooksDir = "docs/runbooks"
	runbookURL  = "https://github.com/example/myoperator/blob/main/docs/runbooks/"
	// promtoolEnv names the promtool binary; make test builds it (make
	// promtool) and sets it.
	promtoolEnv = "PROMTOOL"
)

// ruleFile is a Prometheus rule file: the PrometheusRule's spec.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

type rule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// unitTests is a promtool test rules file, as far as the checks here read it.
type unitTests struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name        string `json:"name"`
		InputSeries []struct {
			Series string `json:"series"`
		} `json:"input_series"`
		AlertRuleTests []struct {
			EvalTime  string `json:"eval_time"`
			Alertname string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// overlay renders config/default with the component, as a user's overlay
// does, once per test binary.
var overlay = sync.OnceValues(func() ([]*unstructured.Unstructured, error) {
	return manifests.RenderWithComponents("config/default", component)
})

func rendered(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	objs, err := overlay()
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// theRules returns the spec of the one PrometheusRule of the overlay.
func theRules(t *testing.T) (ruleFile, []byte) {
	t.Helper()
	prs := manifests.OfKind(rendered(t), "PrometheusRule")
	if len(prs) != 1 {
		t.Fatalf("config/default + %s: %d PrometheusRules, want 1", component, len(prs))
	}
	spec, ok := prs[0].Object["spec"]
	if !ok {
		t.Fatalf("PrometheusRule %s has no spec", prs[0].GetName())
	}
	data, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.UnmarshalStrict(data, &rf); err != nil {
		t.Fatalf("PrometheusRule %s: spec is not a rule file: %v", prs[0].GetName(), err)
	}
	return rf, data
}

func alerts(t *testing.T) []rule {
	t.Helper()
	rf, _ := theRules(t)
	var out []rule
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("the PrometheusRule holds no alert")
	}
	return out
}

// testFiles returns config/prometheus/tests/*.yaml, parsed, by file name.
func testFiles(t *testing.T) map[string]unitTests {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(testutil.RepoRoot(t), testsDir, "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no unit test file in %s (%v)", testsDir, err)
	}
	out := map[string]unitTests{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var ut unitTests
		if err := yaml.Unmarshal(data, &ut); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out[filepath.Base(p)] = ut
	}
	return out
}

// TestComponentInOverlay: config/default alone has no monitoring objects;
// with the component it has the PrometheusRule, a ServiceMonitor that
// selects the metrics Service by its labels and port name, the binding of
// the metrics reader and the dashboard ConfigMap for Grafana's sidecar.
func TestComponentInOverlay(t *testing.T) {
	base, err := manifests.Render("config/default")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range base {
		if strings.HasPrefix(o.GetAPIVersion(), "monitoring.coreos.com/") || o.GetLabels()["grafana_dashboard"] != "" {
			t.Errorf("config/default holds %s %s: monitoring belongs to the optional %s", o.GetKind(), o.GetName(), component)
		}
	}
	objs := rendered(t)
	if got, want := len(objs)-len(base), 4; got != want {
		t.Errorf("the component adds %d objects, want %d (PrometheusRule, ServiceMonitor, ClusterRoleBinding, ConfigMap)", got, want)
	}

	var svc *unstructured.Unstructured
	for _, s := range manifests.OfKind(objs, "Service") {
		if s.GetName() == "myoperator-metrics-service" {
			svc = s
		}
	}
	if svc == nil {
		t.Fatal("no Service myoperator-metrics-service in config/default")
	}
	sms := manifests.OfKind(objs, "ServiceMonitor")
	if len(sms) != 1 {
		t.Fatalf("%d ServiceMonitors, want 1", len(sms))
	}
	sm := sms[0]
	if sm.GetNamespace() != svc.GetNamespace() {
		t.Errorf("ServiceMonitor in %q, the Service in %q", sm.GetNamespace(), svc.GetNamespace())
	}
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	if len(sel) == 0 {
		t.Error("the ServiceMonitor selects no label")
	}
	for k, v := range sel {
		if svc.GetLabels()[k] != v {
			t.Errorf("ServiceMonitor selects %s=%s, the Service has %q", k, v, svc.GetLabels()[k])
		}
	}
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 || len(ports) != 1 {
		t.Fatalf("ServiceMonitor endpoints %v, Service ports %v: want one each", endpoints, ports)
	}
	ep, port := endpoints[0].(map[string]any), ports[0].(map[string]any)
	if ep["port"] != port["name"] || ep["scheme"] != "https" || ep["bearerTokenFile"] == nil {
		t.Errorf("ServiceMonitor endpoint %v: want port %v, scheme https and the ServiceAccount token", ep, port["name"])
	}
	// The CA comes from the ConfigMap the manager publishes, not from the
	// Secret that also holds the serving and CA keys.
	ca, _, _ := unstructured.NestedMap(ep, "tlsConfig", "ca")
	if cm, _, _ := unstructured.NestedString(ca, "configMap", "name"); cm != names.CAConfigMap || ca["secret"] != nil {
		t.Errorf("ServiceMonitor endpoint's CA %v: want ConfigMap %s's ca.crt, no Secret", ca, names.CAConfigMap)
	}

	var binding bool
	for _, b := range manifests.OfKind(objs, "ClusterRoleBinding") {
		ref, _, _ := unstructured.NestedString(b.Object, "roleRef", "name")
		binding = binding || ref == "myoperator-metrics-reader"
	}
	if !binding {
		t.Error("no ClusterRoleBinding of myoperator-metrics-reader for Prometheus")
	}

	var dashboards int
	for _, cm := range manifests.OfKind(objs, "ConfigMap") {
		if cm.GetLabels()["grafana_dashboard"] != "1" {
			continue
		}
		dashboards++
		data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
		if len(data) != 1 || !json.Valid([]byte(data["myoperator.json"])) {
			t.Errorf("ConfigMap %s: want one key myoperator.json holding the dashboard JSON, got keys %v", cm.GetName(), keys(data))
		}
	}
	if dashboards != 1 {
		t.Errorf("%d ConfigMaps labelled grafana_dashboard=1, want 1", dashboards)
	}
}

// promtool returns the promtool binary that PROMTOOL names. Unset (go test
// by hand) skips; set (make test) and not runnable fails.
func promtool(t *testing.T) string {
	t.Helper()
	path := os.Getenv(promtoolEnv)
	if path == "" {
		t.Skipf("%s is not set: make test builds promtool and sets it; by hand run make promtool, then %s=$PWD/bin/promtool-<version> go test ./test/alerts/", promtoolEnv, promtoolEnv)
	}
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s=%s does not run (make promtool builds it): %v: %s", promtoolEnv, path, err, out)
	}
	return path
}

// TestPromtool extracts the PrometheusRule's spec into a rule file, checks
// it with promtool check rules and runs every unit test file on it with
// promtool test rules.
func TestPromtool(t *testing.T) {
	bin := promtool(t)
	_, rules := theRules(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "check", "rules", filepath.Join(dir, "rules.yaml")).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	for name, ut := range testFiles(t) {
		t.Run(name, func(t *testing.T) {
			if !slices.Equal(ut.RuleFiles, []string{"rules.yaml"}) {
				t.Fatalf("rule_files: %v, want [rules.yaml] (the extracted PrometheusRule)", ut.RuleFiles)
			}
			data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), testsDir, name))
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bin, "test", "rules", path).CombinedOutput()
			if err != nil {
				t.Fatalf("promtool test rules %s/%s: %v\n%s", testsDir, name, err, out)
			}
			t.Logf("promtool test rules %s: %d test groups passed", name, len(ut.Tests))
		})
	}
}

// TestEveryAlertTested: each alert has a unit test case where it fires and
// one where it does not, in a test group with input series (the metrics
// there, healthy); no case names an alert that does not exist.
func TestEveryAlertTested(t *testing.T) {
	type cases struct{ firing, quiet []string }
	byAlert := map[string]*cases{}
	for _, a := range alerts(t) {
		byAlert[a.Alert] = &cases{}
	}
	for file, ut := range testFiles(t) {
		for _, tg := range ut.Tests {
			for _, art := range tg.AlertRuleTests {
				c, ok := byAlert[art.Alertname]
				where := fmt.Sprintf("%s: %q at %s", file, tg.Name, art.EvalTime)
				switch {
				case !ok:
					t.Errorf("%s tests alert %s, which the PrometheusRule does not have", where, art.Alertname)
				case len(art.ExpAlerts) > 0:
					c.firing = append(c.firing, where)
				case len(tg.InputSeries) > 0:
					c.quiet = append(c.quiet, where)
				}
			}
		}
	}
	for _, name := range sortedKeys(byAlert) {
		t.Run(name, func(t *testing.T) {
			c := byAlert[name]
			if len(c.firing) == 0 {
				t.Errorf("no unit test case where %s fires (exp_alerts with its labels and annotations)", name)
			}
			if len(c.quiet) == 0 {
				t.Errorf("no unit test case where %s does not fire with its series present (exp_alerts: [])", name)
			}
		})
	}
}

// TestRunbooks: every alert has a severity, a summary, a description and a
// runbook_url whose page exists in docs/runbooks; every page there belongs
// to an alert and is listed in its README.md.
func TestRunbooks(t *testing.T) {
	root := testutil.RepoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, runbooksDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, a := range alerts(t) {
		names[a.Alert] = true
		t.Run(a.Alert, func(t *testing.T) {
			if s := a.Labels["severity"]; !slices.Contains([]string{"critical", "warning", "info"}, s) {
				t.Errorf("severity %q, want critical, warning or info", s)
			}
			for _, k := range []string{"summary", "description"} {
				if a.Annotations[k] == "" {
					t.Errorf("no %s annotation", k)
				}
			}
			want := runbookURL + a.Alert + ".md"
			if got := a.Annotations["runbook_url"]; got != want {
				t.Errorf("runbook_url %q, want %q", got, want)
			}
			if _, err := os.Stat(filepath.Join(root, runbooksDir, a.Alert+".md")); err != nil {
				t.Errorf("no runbook: %v", err)
			}
			if !strings.Contains(string(readme), "("+a.Alert+".md)") {
				t.Errorf("%s/README.md does not link %s.md", runbooksDir, a.Alert)
			}
		})
	}
	pages, err := filepath.Glob(filepath.Join(root, runbooksDir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		if name := strings.TrimSuffix(filepath.Base(p), ".md"); name != "README" && !names[name] {
			t.Errorf("%s/%s.md belongs to no alert of the PrometheusRule", runbooksDir, name)
		}
	}
}

// allowedMetric: the operator's own metrics, controller-runtime's and
// client-go's (work queue, leader election), the process and Go runtime
// collectors', and Prometheus's up.
func allowedMetric(name string) bool {
	for _, p := range []string{"myoperator_", "controller_runtime_", "leader_election_", "workqueue_", "process_", "go_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return name == "up"
}

// TestMetricNames: every expression of the rules and of the dashboard's
// panels uses at least one metric, and only allowed ones.
func TestMetricNames(t *testing.T) {
	exprs := map[string]string{}
	for _, a := range alerts(t) {
		exprs["alert "+a.Alert] = a.Expr
	}
	for i, e := range dashboardExprs(t) {
		exprs[fmt.Sprintf("dashboard panel %q target %d", e.panel, i)] = e.expr
	}
	for _, where := range sortedKeys(exprs) {
		t.Run(where, func(t *testing.T) {
			names := metricNames(exprs[where])
			if len(names) == 0 {
				t.Fatalf("no metric found in %q", exprs[where])
			}
			for _, n := range names {
				if !allowedMetric(n) {
					t.Errorf("metric %s is not the operator's (myoperator_, controller_runtime_, leader_election_, workqueue_, process_, go_, up) in %q", n, exprs[where])
				}
			}
		})
	}
}

type panelExpr struct{ panel, expr string }

// dashboardExprs parses dashboard.json and returns its panels' queries.
func dashboardExprs(t *testing.T) []panelExpr {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), component, "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Type    string `json:"type"`
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	}
	var d struct {
		UID    string  `json:"uid"`
		Title  string  `json:"title"`
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard.json: uid %q, title %q: want both", d.UID, d.Title)
	}
	var out []panelExpr
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("dashboard panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			out = append(out, panelExpr{p.Title, tg.Expr})
		}
	}
	if len(out) == 0 {
		t.Fatal("dashboard.json has no panel with a query")
	}
	return out
}

var (
	// What cannot hold a metric name: string literals, label matchers,
	// ranges and subqueries, grouping label lists, Grafana variables.
	promqlStrings  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promqlMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promqlRanges   = regexp.MustCompile(`\[[^\]]*\]`)
	promqlGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	grafanaVars    = regexp.MustCompile(`\$\{?\w+\}?`)
	promqlIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promqlKeywords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan"}
)

// metricNames returns the metric names a PromQL expression selects: the
// identifiers left once strings, matchers, ranges and grouping lists are
// gone that are neither a function call, a keyword nor part of a number or
// duration.
func metricNames(expr string) []string {
	s := promqlStrings.ReplaceAllString(expr, `""`)
	s = grafanaVars.ReplaceAllString(s, "")
	s = promqlMatchers.ReplaceAllString(s, "{}")
	s = promqlRanges.ReplaceAllString(s, "[]")
	s = promqlGrouping.ReplaceAllString(s, "")
	seen := map[string]bool{}
	for _, loc := range promqlIdent.FindAllStringIndex(s, -1) {
		name := s[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsAny(s[loc[0]-1:loc[0]], "0123456789.") {
			continue // 1e3, 5m
		}
		if rest := strings.TrimLeft(s[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") {
			continue // a function or an aggregation
		}
		if slices.Contains(promqlKeywords, strings.ToLower(name)) {
			continue
		}
		seen[name] = true
	}
	return sortedKeys(seen)
}

func TestMetricNamesParser(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{`up`, "up"},
		{`absent(up{job="x"} == 1)`, "up"},
		{`sum by (controller) (rate(a_total{job="x", le=~"1|2"}[5m])) / on() group_left(pod) b offset 1h`, "a_total b"},
		{`label_replace(m{v="v1alpha1"}, "version", "$1", "authored_version", "(.+)") > 1e3`, "m"},
		{`histogram_quantile(0.99, sum by (le) (rate(h_bucket[$__rate_interval])))`, "h_bucket"},
		{`max(x) - time() < 21 * 24 * 3600 and y unless z`, "x y z"},
		{`sum(rate(x[5m:1m])) without (pod)`, "x"},
	} {
		if got := strings.Join(metricNames(tc.expr), " "); got != tc.want {
			t.Errorf("metricNames(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func keys(m map[string]string) []string { return sortedKeys(m) }

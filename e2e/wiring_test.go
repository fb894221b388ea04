//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
	"github.com/example/myoperator/test/framework/kwokconfig"
	"github.com/example/myoperator/test/framework/testenv"
)

// The production webhook wiring: the API server calls every admission
// webhook and the Drink conversion through the Service
// myoperator-webhook-service, trusting the CA the operator injects. On the
// real node kube-proxy routes the Service's ClusterIP; on kwok nodes, which
// run no kube-proxy, either the suite's stand-in for it does
// (E2E_SERVICE_PATH=clusterip, test/kubeproxy) or the API server calls the
// Service's ready endpoints itself (aggregator routing); either way the
// pod runner serves each pod at its pod IP.

const (
	webhookService = "myoperator-webhook-service"
	// heldCondition is a readiness gate the suite adds to the operator's
	// pod template: a pod that carries it runs and serves like the others
	// but is not Ready until the condition is set, which the suite never
	// does.
	heldCondition = "e2e.example.com/held"
	wiringNS      = "e2e-wiring"
)

// productionWiring is "" when the operator is installed with the
// production webhook wiring; otherwise it says why an assessment of that
// wiring is skipped.
func productionWiring() string {
	if mode.created() || installedConfig() != "config/local" {
		return ""
	}
	return "config/local sends the webhook calls to https://localhost:9443 (a manager on this host), not through the Service"
}

// wiringErrors lists what in the webhook configurations and the Drink CRD
// does not name the webhook Service with a CA bundle that parses.
func wiringErrors(ctx context.Context) []string {
	var errs []string
	check := func(what string, cc *admissionregistrationv1.WebhookClientConfig) {
		switch {
		case cc.URL != nil:
			errs = append(errs, fmt.Sprintf("%s calls the URL %s", what, *cc.URL))
		case cc.Service == nil || cc.Service.Name != webhookService || cc.Service.Namespace != operatorNS:
			errs = append(errs, fmt.Sprintf("%s names Service %+v, want %s/%s", what, cc.Service, operatorNS, webhookService))
		}
		if err := parsesAsCA(cc.CABundle); err != nil {
			errs = append(errs, fmt.Sprintf("%s: caBundle: %v", what, err))
		}
	}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := kc.Get(ctx, client.ObjectKey{Name: mutatingConfig}, m); err != nil {
		return []string{err.Error()}
	}
	for i := range m.Webhooks {
		check("mutating webhook "+m.Webhooks[i].Name, &m.Webhooks[i].ClientConfig)
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := kc.Get(ctx, client.ObjectKey{Name: validatingConfig}, v); err != nil {
		return []string{err.Error()}
	}
	for i := range v.Webhooks {
		check("validating webhook "+v.Webhooks[i].Name, &v.Webhooks[i].ClientConfig)
	}
	if len(m.Webhooks) == 0 || len(v.Webhooks) == 0 {
		errs = append(errs, fmt.Sprintf("%d mutating and %d validating webhooks, want some of each", len(m.Webhooks), len(v.Webhooks)))
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := kc.Get(ctx, client.ObjectKey{Name: "drinks.example.com"}, crd); err != nil {
		return append(errs, err.Error())
	}
	conv := crd.Spec.Conversion
	if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		return append(errs, fmt.Sprintf("the Drink CRD's conversion %+v is not a webhook", conv))
	}
	cc := conv.Webhook.ClientConfig
	acc := &admissionregistrationv1.WebhookClientConfig{URL: cc.URL, CABundle: cc.CABundle}
	if cc.Service != nil {
		acc.Service = &admissionregistrationv1.ServiceReference{Namespace: cc.Service.Namespace, Name: cc.Service.Name}
	}
	check("the Drink CRD's conversion webhook", acc)
	return errs
}

// parsesAsCA says why a caBundle is not a PEM CA certificate.
func parsesAsCA(bundle []byte) error {
	if len(bundle) == 0 {
		return fmt.Errorf("empty")
	}
	block, _ := pem.Decode(bundle)
	if block == nil {
		return fmt.Errorf("no PEM block")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return err
	}
	if !c.IsCA {
		return fmt.Errorf("certificate %q is not a CA", c.Subject)
	}
	return nil
}

// assessWebhookWiring: every webhook configuration and the Drink CRD's
// conversion name the Service with a non-empty CA bundle.
func assessWebhookWiring(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
	if why := productionWiring(); why != "" {
		skip(t, why)
	}
	testenv.Eventually(t, 60*time.Second, func() string { return strings.Join(wiringErrors(ctx), "; ") })
	fmt.Printf("e2e: every mutating and validating webhook and the Drink conversion name Service %s/%s, caBundle a CA certificate\n", operatorNS, webhookService)
	return ctx
}

// assessReadyEndpointsOnly: with a third replica that serves webhooks but
// is held not Ready (a readiness gate nobody sets), the API server's calls
// through the Service reach only the Ready replicas: the per-pod webhook
// request counters (controller-runtime's, read from each pod's metrics
// endpoint) of the Ready pods rise by at least the number of calls, the
// held pod's by none, though it answers a call sent to it directly.
func assessReadyEndpointsOnly(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
	if why := productionWiring(); why != "" {
		skip(t, why)
	}
	if !mode.created() {
		skip(t, "the suite reaches the operator pods' IPs (their metrics) only on the cluster it creates")
	}
	token := metricsToken(ctx, t)
	t.Cleanup(func() {
		cleanUp(t, cfg, "namespace", wiringNS)
		cleanUp(t, cfg, "clusterrolebinding", wiringNS+"-metrics")
	})
	before := operatorPodNames(ctx, t)

	// Hold a new replica out of the Service: the readiness gate makes a
	// rollout whose new pod stays not Ready (maxUnavailable 0 keeps the
	// two Ready ones).
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"readinessGates":[{"conditionType":%q}]}}}}`, heldCondition)
	if out, err := kubectl(cfg, "patch", "deployment", "-n", operatorNS, operatorDeployment, "--type=strategic", "-p", patch); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := kubectl(cfg, "patch", "deployment", "-n", operatorNS, operatorDeployment, "--type=json",
			"-p", `[{"op":"remove","path":"/spec/template/spec/readinessGates"}]`); err != nil {
			t.Errorf("removing the readiness gate: %v: %s", err, out)
		}
		if err := waitOperatorReady(ctx, 3*time.Minute); err != nil {
			t.Error(err)
		}
	})
	var held *corev1.Pod
	testenv.Eventually(t, 2*time.Minute, func() string {
		items, err := listOperatorPods(ctx)
		if err != nil {
			return err.Error()
		}
		for i := range items {
			p := &items[i]
			if before[p.Name] || p.DeletionTimestamp != nil || p.Status.PodIP == "" {
				continue
			}
			if managerServes(p) {
				held = p
				return ""
			}
			return fmt.Sprintf("new pod %s: manager container not ready yet", p.Name)
		}
		return "no new operator pod yet"
	})
	for _, c := range held.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			t.Fatalf("pod %s is Ready despite its readiness gate", held.Name)
		}
	}
	// The EndpointSlice lists it, not ready: kube-proxy must skip it.
	testenv.Eventually(t, 30*time.Second, func() string {
		out, _ := kubectl(cfg, "get", "endpointslices", "-n", operatorNS, "-l", "kubernetes.io/service-name="+webhookService,
			"-o", `jsonpath={range .items[*].endpoints[*]}{.targetRef.name}={.conditions.ready}{" "}{end}`)
		if !strings.Contains(out, held.Name+"=false") {
			return "EndpointSlice endpoints " + out + ", want " + held.Name + " listed not ready"
		}
		return ""
	})

	pods := readyOperatorPods(ctx, t)
	pods[held.Name] = held.Status.PodIP
	counts := func() map[string]float64 {
		out := map[string]float64{}
		for name, ip := range pods {
			n, err := webhookRequests(ip, token)
			if err != nil {
				t.Fatalf("pod %s: %v", name, err)
			}
			out[name] = n
		}
		return out
	}
	c0 := counts()
	const calls = 60
	sendWebhookCalls(ctx, t, calls)
	c1 := counts()
	// A call straight to the held pod counts there: it serves, and its
	// counter works; only the Service kept the API server's calls away.
	directCall(t, held.Status.PodIP)
	c2 := counts()

	var readySum float64
	var spread []string
	for name := range pods {
		d := c1[name] - c0[name]
		spread = append(spread, fmt.Sprintf("%s (ready %t): +%.0f", name, name != held.Name, d))
		if name != held.Name {
			readySum += d
		}
	}
	fmt.Printf("e2e: %d server-side dry-run creates through v1alpha1 (each: mutating, validating and conversion webhooks); webhook requests per pod: %s; direct call to the held pod: +%.0f\n",
		calls, strings.Join(spread, ", "), c2[held.Name]-c1[held.Name])
	if d := c1[held.Name] - c0[held.Name]; d != 0 {
		t.Errorf("the not-Ready pod %s received %.0f webhook requests through the Service", held.Name, d)
	}
	if readySum < calls {
		t.Errorf("the Ready pods received %.0f webhook requests for %d creates, want at least %d", readySum, calls, calls)
	}
	if c2[held.Name]-c1[held.Name] < 1 {
		t.Errorf("a direct call to the held pod %s did not count there: its counter does not show what it serves", held.Name)
	}
	return ctx
}

// managerServes says whether the pod's manager container passes its
// readiness probe (whatever the pod's readiness gates say): the kubelet's
// container status on the real node, the pod runner's probe on kwok nodes.
func managerServes(p *corev1.Pod) bool {
	if !mode.realNode {
		for _, s := range runner.Pods() {
			if s.Pod == p.Name {
				return s.Ready
			}
		}
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == "manager" && cs.Ready {
			return true
		}
	}
	return false
}

// webhookAddrs are where the API server calls the webhook Service: its
// ClusterIP on the real node (kube-proxy) and through the suite's
// stand-in for kube-proxy, its ready endpoints with aggregator routing
// (the pods at their IPs).
func webhookAddrs(ctx context.Context) ([]string, error) {
	if mode.realNode || servicePath() == kwokconfig.ClusterIP {
		svc := &corev1.Service{}
		if err := kc.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: webhookService}, svc); err != nil {
			return nil, err
		}
		return []string{net.JoinHostPort(svc.Spec.ClusterIP, "443")}, nil
	}
	slices := &discoveryv1.EndpointSliceList{}
	if err := kc.List(ctx, slices, client.InNamespace(operatorNS), client.MatchingLabels{discoveryv1.LabelServiceName: webhookService}); err != nil {
		return nil, err
	}
	var addrs []string
	for _, s := range slices.Items {
		for _, ep := range s.Endpoints {
			if !ptr.Deref(ep.Conditions.Ready, false) {
				continue
			}
			for _, port := range s.Ports {
				for _, a := range ep.Addresses {
					addrs = append(addrs, net.JoinHostPort(a, strconv.Itoa(int(ptr.Deref(port.Port, 0)))))
				}
			}
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("the Service %s/%s has no ready endpoint", operatorNS, webhookService)
	}
	return addrs, nil
}

// operatorPodNames are the operator's pods now.
func operatorPodNames(ctx context.Context, t *testing.T) map[string]bool {
	t.Helper()
	pods, err := operatorPodList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, p := range pods {
		out[p.name] = true
	}
	return out
}

// readyOperatorPods are the Ready operator pods, by name, with their IPs.
func readyOperatorPods(ctx context.Context, t *testing.T) map[string]string {
	t.Helper()
	items, err := listOperatorPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i := range items {
		p := &items[i]
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
				out[p.Name] = p.Status.PodIP
			}
		}
	}
	if len(out) != 2 {
		t.Fatalf("%d Ready operator pods %v, want 2", len(out), out)
	}
	return out
}

// metricsToken is a token of a ServiceAccount bound to the operator's
// metrics-reader ClusterRole, as Prometheus would have.
func metricsToken(ctx context.Context, t *testing.T) string {
	t.Helper()
	if err := kc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: wiringNS}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: wiringNS, Name: "metrics"}}
	if err := kc.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: wiringNS + "-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "myoperator-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: wiringNS, Name: "metrics"}},
	}
	if err := kc.Create(ctx, crb); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(wiringNS).CreateToken(ctx, "metrics",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// insecure is for reading counters and reaching a pod directly: the
// suite checks what the pods count, not who they are (the API server's
// own calls verify the injected CA).
var insecure = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
	TLSClientConfig:   &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // see above
	DisableKeepAlives: true,
}}

// webhookRequests is the sum of controller_runtime_webhook_requests_total
// (every path, every code) on the pod's metrics endpoint.
func webhookRequests(ip, token string) (float64, error) {
	req, err := http.NewRequest(http.MethodGet, "https://"+ip+":8443/metrics", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := insecure.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	var sum float64
	seen := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "controller_runtime_webhook_requests_total{") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("%q: %w", line, err)
		}
		sum += v
		seen = true
	}
	if !seen {
		// A pod that has served nothing yet has no series.
		return 0, sc.Err()
	}
	return sum, sc.Err()
}

// sendWebhookCalls makes n server-side dry-run creates of a v1alpha1
// Drink, six at a time: each passes the mutating and validating webhooks
// and the conversion webhook, and nothing is stored.
func sendWebhookCalls(ctx context.Context, t *testing.T, n int) {
	t.Helper()
	// Without the deprecation warnings of 4 x n v1alpha1 writes in the log.
	rc := rest.CopyConfig(restConfig)
	rc.WarningHandler = rest.NoWarnings{}
	c, err := client.New(rc, client.Options{Scheme: kc.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range testenv.InParallel(n, 6, func(i int) error {
		d := &drinksv1alpha1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: wiringNS, Name: fmt.Sprintf("call-%d", i)},
			Spec: drinksv1alpha1.DrinkSpec{Name: "Tea", Drink: "tea"}}
		return c.Create(ctx, d, client.DryRunAll)
	}) {
		t.Errorf("a dry-run create through the webhooks failed: %v", err)
	}
}

// directCall sends one request straight to a pod's webhook port.
func directCall(t *testing.T, ip string) {
	t.Helper()
	resp, err := insecure.Post("https://"+ip+":9443/convert", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("a direct call to %s:9443: %v", ip, err)
	}
	_ = resp.Body.Close()
}

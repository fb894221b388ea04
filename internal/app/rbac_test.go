package app_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/internal/app"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/internal/scheme"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/framework/testutil"
)

// TestManagerWithItsOwnRBAC: the manager runs with a token of its
// ServiceAccount (TokenRequest API), bound only to config/rbac, with leader
// election and its own certificates, and reconciles the OperatorConfig, a
// Drink written in v1alpha1 (conversion and admission through its webhooks)
// and a Guestbook.
func TestManagerWithItsOwnRBAC(t *testing.T) {
	env, cfg, admin := testenv.Start(t, testenv.Options{Webhooks: true, WebhookHost: "localhost"})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNS}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "drinks"}},
		// The install ships the default operand namespace with the
		// operator's RoleBinding there; team-b has none.
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "guestbook"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: names.CertSecret}},
	} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	installRBAC(ctx, t, admin)

	// A token of the ServiceAccount, and a config that carries nothing else.
	tr, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ServiceAccounts(operatorNS).CreateToken(ctx,
		"myoperator-controller-manager", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	saCfg := &rest.Config{Host: cfg.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}}
	sa, err := client.New(saCfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "things.example.org"}}
	if err := sa.Create(ctx, crd); !apierrors.IsForbidden(err) {
		t.Fatalf("the ServiceAccount may create CRDs (err %v): not least privilege", err)
	}

	wo := env.WebhookInstallOptions
	lease, renew, retry := 4*time.Second, 3*time.Second, time.Second
	metricsAddr := testutil.FreeAddr(t, env.WebhookInstallOptions.LocalServingPort)
	mgr, err := app.New(saCfg, app.InProcess(app.Options{
		Namespace: operatorNS, MetricsAddr: metricsAddr, SecureMetrics: true, ProbeAddr: "0",
		WebhookHost: "127.0.0.1", WebhookPort: wo.LocalServingPort, CertDir: t.TempDir(),
		Certs:          &app.CertOptions{ExtraDNSNames: []string{"localhost"}},
		LeaderElection: true, LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry,
	}))
	if err != nil {
		t.Fatal(err)
	}
	testenv.RunManager(ctx, t, mgr)

	oc := &operatorv1alpha1.OperatorConfig{ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName}}
	if err := admin.Create(ctx, oc); err != nil {
		t.Fatal(err)
	}
	// The first Drink write needs the webhooks, served once the certificates
	// are injected.
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := admin.Create(ctx, &drinksv1alpha1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "drinks", Name: "tea"},
			Spec: drinksv1alpha1.DrinkSpec{Name: "Tea", Drink: "tea"}})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Drink accepted within 60s: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	gb := &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: "rbac"}, Spec: webappv1.GuestbookSpec{Size: 2, ConfigMapName: "rbac-cm"}}
	if err := admin.Create(ctx, gb); err != nil {
		t.Fatal(err)
	}

	testenv.Eventually(t, 30*time.Second, func() string {
		d := &drinksv1.Drink{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: "drinks", Name: "tea"}, d); err != nil {
			return err.Error()
		}
		if !meta.IsStatusConditionTrue(d.Status.Conditions, drinksv1.ConditionReady) {
			return "Drink not Ready"
		}
		cm := &corev1.ConfigMap{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: "drinks", Name: "tea"}, cm); err != nil || cm.Data["drink"] != "tea" {
			return "Drink ConfigMap missing"
		}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(oc), oc); err != nil ||
			!meta.IsStatusConditionTrue(oc.Status.Conditions, operatorv1alpha1.ConditionAvailable) {
			return "OperatorConfig not Available"
		}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(gb), gb); err != nil || gb.Status.ObservedGeneration != gb.Generation {
			return "Guestbook status not written"
		}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: "guestbook", Name: "rbac"}, &appsv1.StatefulSet{}); err != nil {
			return "Guestbook StatefulSet: " + err.Error()
		}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: "guestbook", Name: "rbac-cm"}, &corev1.ConfigMap{}); err != nil {
			return "Guestbook ConfigMap: " + err.Error()
		}
		l := &coordinationv1.Lease{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: "myoperator.example.com"}, l); err != nil || l.Spec.HolderIdentity == nil {
			return "no Lease held"
		}
		return ""
	})
	checkSecureMetrics(ctx, t, cfg, admin, metricsAddr)
	checkOperandNamespaceRights(ctx, t, admin, gb)
}

// checkOperandNamespaceRights: moved to a namespace where the operator has
// no RoleBinding, the Guestbook says exactly which binding to create and its
// operands stay; once an admin creates it, the operator works there without
// a restart.
func checkOperandNamespaceRights(ctx context.Context, t *testing.T, admin client.Client, gb *webappv1.Guestbook) {
	t.Helper()
	oc := &operatorv1alpha1.OperatorConfig{}
	if err := admin.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, oc); err != nil {
		t.Fatal(err)
	}
	oc.Spec.Guestbook.Namespace = "team-b"
	if err := admin.Update(ctx, oc); err != nil {
		t.Fatal(err)
	}
	const bind = "kubectl create rolebinding myoperator-guestbook-operands -n team-b --clusterrole=myoperator-guestbook-operands --serviceaccount=myoperator-system:myoperator-controller-manager"
	testenv.Eventually(t, 30*time.Second, func() string {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(gb), gb); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(gb.Status.Conditions, webappv1.ConditionReady)
		if c == nil || c.Reason != "OperandNamespaceForbidden" || !strings.Contains(c.Message, bind) {
			return fmt.Sprintf("Ready %+v, want OperandNamespaceForbidden naming %q", c, bind)
		}
		return ""
	})
	if err := admin.Get(ctx, client.ObjectKey{Namespace: "guestbook", Name: gb.Name}, &appsv1.StatefulSet{}); err != nil {
		t.Fatalf("the operands left namespace guestbook although team-b is forbidden: %v", err)
	}
	if err := admin.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "myoperator-guestbook-operands"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "myoperator-guestbook-operands"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: operatorNS, Name: "myoperator-controller-manager"}},
	}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() string {
		if err := admin.Get(ctx, client.ObjectKey{Namespace: "team-b", Name: gb.Name}, &appsv1.StatefulSet{}); err != nil {
			return "no StatefulSet in team-b after the RoleBinding: " + err.Error()
		}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: "team-b", Name: gb.Name}, &corev1.Service{}); err != nil {
			return "no Service in team-b after the RoleBinding: " + err.Error()
		}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: "team-b", Name: gb.Name}, &networkingv1.NetworkPolicy{}); err != nil {
			return "no NetworkPolicy in team-b after the RoleBinding: " + err.Error()
		}
		return ""
	})
}

// checkSecureMetrics: /metrics refuses a caller without a token (401) and
// one whose ServiceAccount is not bound to myoperator-metrics-reader
// (403), and serves one that is (200).
func checkSecureMetrics(ctx context.Context, t *testing.T, cfg *rest.Config, admin client.Client, addr string) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(cfg)
	token := func(sa string) string {
		if err := admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "drinks", Name: sa}}); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts("drinks").CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	stranger, prometheus := token("stranger"), token("prometheus")
	if err := admin.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-reads-myoperator"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "myoperator-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "drinks", Name: "prometheus"}},
	}); err != nil {
		t.Fatal(err)
	}
	// The endpoint's certificate is self-signed: this checks who may read,
	// not the serving certificate.
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // see above
	get := func(token string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, c := range []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"not bound to the metrics reader", stranger, http.StatusForbidden},
		{"bound to the metrics reader", prometheus, http.StatusOK},
	} {
		testenv.Eventually(t, 30*time.Second, func() string {
			code, body := get(c.token)
			if code != c.want {
				return fmt.Sprintf("%s: /metrics answered %d, want %d", c.name, code, c.want)
			}
			if code == http.StatusOK && !strings.Contains(body, "controller_runtime_reconcile_total") {
				return c.name + ": no controller metrics in the answer"
			}
			return ""
		})
	}
}

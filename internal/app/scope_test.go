package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/internal/app"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/test/framework/manifests"
	"github.com/example/myoperator/test/framework/testenv"
)

// TestParseWatchNamespaces: the flag's value becomes the list, or an error
// that names the flag, the entry and the rule.
func TestParseWatchNamespaces(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  []string
		err   string
	}{
		{value: "", want: nil},
		{value: "  ", want: nil},
		{value: "team-a", want: []string{"team-a"}},
		{value: "team-a, team-b", want: []string{"team-a", "team-b"}},
		{value: "team-a,,team-b", err: "--watch-namespaces: entry 2 is empty"},
		{value: "team-a,", err: "--watch-namespaces: entry 2 is empty"},
		{value: "Team-A", err: `--watch-namespaces: entry 1 "Team-A" is not a namespace name: a lowercase RFC 1123 label`},
		{value: "team_a", err: `entry 1 "team_a" is not a namespace name`},
		{value: strings.Repeat("a", 64), err: "must be no more than 63 characters"},
		{value: "team-a,team-b,team-a", err: `--watch-namespaces: entry 3 "team-a" repeats entry 1`},
	} {
		t.Run(tt.value, func(t *testing.T) {
			got, err := app.ParseWatchNamespaces(tt.value)
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("error %v, want one containing %q", err, tt.err)
			case tt.err == "" && fmt.Sprint(got) != fmt.Sprint(tt.want):
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
	if _, err := app.New(&rest.Config{Host: "https://127.0.0.1:1"}, app.Options{WatchNamespaces: []string{"a", "a"}}); err == nil ||
		!strings.Contains(err.Error(), "repeats") {
		t.Fatalf("app.New with a repeated namespace: %v, want the validation error", err)
	}
}

// The namespaced install of config/namespace-scope serves these two; the
// third has a Drink the operator must leave alone.
var (
	servedNamespaces = []string{"team-a", "team-b"}
	unservedNS       = "team-c"
)

// TestNamespaceScope installs the RBAC of config/default with
// config/namespace-scope, as kustomize renders it, and asks the API server
// (SubjectAccessReview) what the manager's ServiceAccount may do; then runs
// the manager with only those rights, under its ServiceAccount's token,
// serving team-a and team-b: their Drinks get their ConfigMaps and Ready,
// the Drink in team-c gets no ConfigMap, no status and no event, and
// Guestbooks and the OperatorConfig (cluster-scoped) work as before.
func TestNamespaceScope(t *testing.T) {
	start := time.Now()
	env, cfg, admin := testenv.Start(t, testenv.Options{Webhooks: true, WebhookHost: "localhost"})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, ns := range append([]string{operatorNS, "guestbook", unservedNS}, servedNamespaces...) {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: names.CertSecret}}); err != nil {
		t.Fatal(err)
	}
	watched := installNamespaceScope(ctx, t, admin)
	if strings.Join(watched, ",") != strings.Join(servedNamespaces, ",") {
		t.Fatalf("config/namespace-scope sets --watch-namespaces=%s, want %s", strings.Join(watched, ","), strings.Join(servedNamespaces, ","))
	}
	checkNamespaceScopeRights(ctx, t, admin)

	tr, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ServiceAccounts(operatorNS).CreateToken(ctx,
		names.ServiceAccount, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	saCfg := &rest.Config{Host: cfg.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}}
	wo := env.WebhookInstallOptions
	mgr, err := app.New(saCfg, app.InProcess(app.Options{
		Namespace: operatorNS, MetricsAddr: "0", ProbeAddr: "0",
		WebhookHost: "127.0.0.1", WebhookPort: wo.LocalServingPort, CertDir: t.TempDir(),
		Certs:           &app.CertOptions{ExtraDNSNames: []string{"localhost"}},
		WatchNamespaces: watched,
	}))
	if err != nil {
		t.Fatal(err)
	}
	testenv.RunManager(ctx, t, mgr)
	if err := admin.Create(ctx, &operatorv1alpha1.OperatorConfig{ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName}}); err != nil {
		t.Fatal(err)
	}
	drink := func(ns string) *drinksv1.Drink {
		return &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tea"},
			Spec: drinksv1.DrinkSpec{DisplayName: "Tea", Beverage: "tea"}}
	}
	// The unserved namespace's Drink first: once the served ones, created
	// after it, are Ready, a manager that watched team-c would have
	// reconciled it too.
	testenv.Eventually(t, 60*time.Second, func() string {
		if err := admin.Create(ctx, drink(unservedNS)); err != nil {
			return "the webhooks do not admit a Drink yet: " + err.Error()
		}
		return ""
	})
	for _, ns := range servedNamespaces {
		if err := admin.Create(ctx, drink(ns)); err != nil {
			t.Fatal(err)
		}
	}
	gb := &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: "scoped"}, Spec: webappv1.GuestbookSpec{Size: 1, ConfigMapName: "scoped-cm"}}
	if err := admin.Create(ctx, gb); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() string {
		for _, ns := range servedNamespaces {
			d := &drinksv1.Drink{}
			if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tea"}, d); err != nil {
				return err.Error()
			}
			if !meta.IsStatusConditionTrue(d.Status.Conditions, drinksv1.ConditionReady) {
				return fmt.Sprintf("the Drink in served namespace %s is not Ready", ns)
			}
			cm := &corev1.ConfigMap{}
			if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tea"}, cm); err != nil {
				return fmt.Sprintf("the Drink in served namespace %s has no ConfigMap: %v", ns, err)
			}
		}
		oc := &operatorv1alpha1.OperatorConfig{}
		if err := admin.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, oc); err != nil ||
			!meta.IsStatusConditionTrue(oc.Status.Conditions, operatorv1alpha1.ConditionAvailable) {
			return "OperatorConfig not Available"
		}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: "guestbook", Name: gb.Name}, &appsv1.StatefulSet{}); err != nil {
			return "Guestbook StatefulSet: " + err.Error()
		}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: "guestbook", Name: gb.Spec.ConfigMapName}, &corev1.ConfigMap{}); err != nil {
			return "Guestbook ConfigMap: " + err.Error()
		}
		return ""
	})

	// The Guestbook's ConfigMap is watched in its operand namespace, which
	// is not served: deleted, it comes back.
	gcm := &corev1.ConfigMap{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: "guestbook", Name: gb.Spec.ConfigMapName}, gcm); err != nil {
		t.Fatal(err)
	}
	if err := admin.Delete(ctx, gcm); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, func() string {
		again := &corev1.ConfigMap{}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(gcm), again); err != nil || again.UID == gcm.UID {
			return fmt.Sprintf("the Guestbook's deleted ConfigMap was not created again (%v)", err)
		}
		return ""
	})

	// Left alone: no status, no ConfigMap, no event.
	d := &drinksv1.Drink{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: unservedNS, Name: "tea"}, d); err != nil {
		t.Fatal(err)
	}
	if len(d.Status.Conditions) > 0 || d.Status.ObservedGeneration != 0 {
		t.Errorf("the Drink in unserved namespace %s has a status: %+v", unservedNS, d.Status)
	}
	cms := &corev1.ConfigMapList{}
	if err := admin.List(ctx, cms, client.InNamespace(unservedNS)); err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		if cm.Name != "kube-root-ca.crt" {
			t.Errorf("ConfigMap %s/%s written in an unserved namespace", unservedNS, cm.Name)
		}
	}
	evs := &eventsv1.EventList{}
	if err := admin.List(ctx, evs, client.InNamespace(unservedNS)); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		t.Errorf("event in unserved namespace %s: %s %s %s", unservedNS, e.Reason, e.Regarding.Name, e.Note)
	}
	t.Logf("took %s", time.Since(start).Round(time.Millisecond))
}

// installNamespaceScope creates the RBAC objects of config/default with
// config/namespace-scope and returns the served namespaces its
// Deployment's --watch-namespaces names.
func installNamespaceScope(ctx context.Context, t *testing.T, admin client.Client) []string {
	t.Helper()
	objs, err := manifests.RenderWithComponents("config/default", "config/namespace-scope")
	if err != nil {
		t.Fatal(err)
	}
	var watched []string
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding":
			if err := admin.Create(ctx, o); err != nil {
				t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
			}
		case "Deployment":
			d := &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
				t.Fatal(err)
			}
			for _, a := range d.Spec.Template.Spec.Containers[0].Args {
				if v, ok := strings.CutPrefix(a, "--watch-namespaces="); ok {
					if watched, err = app.ParseWatchNamespaces(v); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	return watched
}

// checkNamespaceScopeRights asks the API server what the ServiceAccount may
// do under the namespaced install: Drinks and ConfigMaps in the served
// namespaces only, and what stays cluster-wide.
func checkNamespaceScopeRights(ctx context.Context, t *testing.T, admin client.Client) {
	t.Helper()
	type q struct {
		verb, group, resource, ns, name string
		allowed                         bool
	}
	var table []q
	for _, ns := range servedNamespaces {
		table = append(table,
			q{"watch", "example.com", "drinks", ns, "", true},
			q{"update", "example.com", "drinks/status", ns, "", true},
			q{"patch", "example.com", "drinks/status", ns, "", true},
			q{"create", "", "configmaps", ns, "", true},
			q{"patch", "", "configmaps", ns, "", true},
			q{"list", "", "configmaps", ns, "", true},
			q{"create", "events.k8s.io", "events", ns, "", true},
			// Never delete: garbage collection removes a Drink's ConfigMap.
			q{"delete", "", "configmaps", ns, "", false},
		)
	}
	table = append(table,
		// Not served: no reconcile there, so no watch, status write or
		// ConfigMap.
		q{"watch", "example.com", "drinks", unservedNS, "", false},
		q{"watch", "example.com", "drinks", "", "", false},
		q{"update", "example.com", "drinks/status", unservedNS, "", false},
		q{"get", "", "configmaps", unservedNS, "", false},
		q{"create", "", "configmaps", unservedNS, "", false},
		q{"patch", "", "configmaps", unservedNS, "", false},
		q{"list", "", "configmaps", "", "", false},
		q{"create", "", "configmaps", "kube-system", "", false},
		// What stays cluster-wide: the storage migration lists every Drink
		// and rewrites it through an empty status patch (a CRD's storage
		// version is cluster-wide), Guestbooks and the OperatorConfig are
		// cluster-scoped, events of cluster-scoped objects go to default.
		q{"list", "example.com", "drinks", "", "", true},
		q{"patch", "example.com", "drinks", unservedNS, "", true},
		q{"patch", "example.com", "drinks/status", unservedNS, "", true},
		q{"watch", "webapp.my.domain", "guestbooks", "", "", true},
		q{"patch", "operator.example.com", "operatorconfigs/status", "", "cluster", true},
		q{"create", "events.k8s.io", "events", "default", "", true},
		// The record of the accepted configuration, by name in its own
		// namespace; no other ConfigMap there.
		q{"create", "", "configmaps", operatorNS, "", true},
		q{"update", "", "configmaps", operatorNS, "myoperator-accepted-config", true},
		q{"get", "", "configmaps", operatorNS, "myoperator-accepted-config", true},
		q{"watch", "", "configmaps", operatorNS, "myoperator-accepted-config", true},
		q{"get", "", "configmaps", operatorNS, "something-else", false},
		q{"list", "", "configmaps", operatorNS, "", false},
		q{"watch", "", "configmaps", operatorNS, "", false},
		// The Guestbook's ConfigMap in its operand namespace.
		q{"watch", "", "configmaps", "guestbook", "", true},
		q{"create", "", "configmaps", "guestbook", "", true},
	)
	for _, tt := range table {
		checkAccess(ctx, t, admin, authorizationv1.ResourceAttributes{
			Verb: tt.verb, Group: tt.group, Resource: tt.resource, Namespace: tt.ns, Name: tt.name,
		}, tt.allowed)
	}
	t.Logf("%d questions asked", len(table))
}

//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
)

// scopeConfig is config/default with config/namespace-scope, which serves
// team-a and team-b; scopeUnserved is a namespace it does not serve.
const (
	scopeConfig   = "config/namespace-scope-default"
	scopeUnserved = "team-c"
)

var scopeServed = []string{"team-a", "team-b"}

// namespaceScope: the operator installed with config/namespace-scope
// (kubectl apply --server-side -k config/namespace-scope-default over the
// suite's config/default: the manager's --watch-namespaces and the
// namespaced RBAC, rolled out) serves the Drinks of team-a and team-b,
// each Ready with its ConfigMap, and leaves the Drink in team-c without
// status, ConfigMap or event. Afterwards config/default goes back on and
// the component's own objects are deleted.
func namespaceScope() features.Feature {
	return features.New("namespace scope").WithLabel("area", "namespace-scope").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			var manifest strings.Builder
			for _, ns := range append([]string{scopeUnserved}, scopeServed...) {
				fmt.Fprintf(&manifest, "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n---\n", ns)
			}
			if out, err := apply(cfg, manifest.String()); err != nil {
				t.Fatalf("kubectl apply: %v\n%s", err, out)
			}
			rollOut(ctx, t, cfg, scopeConfig)
			return ctx
		}).
		Assess("served namespaces: Ready, with a ConfigMap", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// The unserved namespace's Drink first: once the served ones,
			// written after it, are Ready, a manager that watched team-c
			// would have reconciled it too.
			for _, ns := range append([]string{scopeUnserved}, scopeServed...) {
				d := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tea"}, Spec: drinksv1.DrinkSpec{DisplayName: "Tea", Beverage: "tea"}}
				if err := kc.Create(ctx, d); err != nil {
					t.Fatal(err)
				}
			}
			for _, ns := range scopeServed {
				conditionTrueWithin("drinks.example.com", ns, "tea", "Ready", settle)(ctx, t, cfg)
				if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tea"}, &corev1.ConfigMap{}); err != nil {
					t.Errorf("the Drink in served namespace %s has no ConfigMap: %v", ns, err)
				}
			}
			return ctx
		}).
		Assess("unserved namespace: no status, ConfigMap or event", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			d := &drinksv1.Drink{}
			if err := kc.Get(ctx, client.ObjectKey{Namespace: scopeUnserved, Name: "tea"}, d); err != nil {
				t.Fatal(err)
			}
			if len(d.Status.Conditions) > 0 || d.Status.ObservedGeneration != 0 {
				t.Errorf("the Drink in %s has a status: %+v", scopeUnserved, d.Status)
			}
			if err := kc.Get(ctx, client.ObjectKey{Namespace: scopeUnserved, Name: "tea"}, &corev1.ConfigMap{}); err == nil {
				t.Errorf("the Drink in %s got a ConfigMap", scopeUnserved)
			}
			evs := &eventsv1.EventList{}
			if err := kc.List(ctx, evs, client.InNamespace(scopeUnserved)); err != nil {
				t.Fatal(err)
			}
			for _, e := range evs.Items {
				t.Errorf("event in %s: %s %s/%s %s", scopeUnserved, e.Reason, e.Regarding.Kind, e.Regarding.Name, e.Note)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// The Drinks go first: the operator, cluster-wide again, must
			// not meet team-c's Drink in a namespace being deleted.
			for _, ns := range append([]string{scopeUnserved}, scopeServed...) {
				if out, err := kubectl(cfg, "delete", "drinks.example.com", "--all", "-n", ns, "--timeout=1m"); err != nil {
					t.Errorf("kubectl delete drinks -n %s: %v: %s", ns, err, out)
				}
			}
			rollOut(ctx, t, cfg, installedConfig())
			for _, args := range [][]string{
				{"delete", "clusterrole", "myoperator-served-namespace", "--ignore-not-found"},
				{"delete", "-n", operatorNS, "role,rolebinding", "myoperator-accepted-config", "--ignore-not-found"},
				{"delete", "namespace", "--wait=false", "--ignore-not-found", scopeUnserved, scopeServed[0], scopeServed[1]},
			} {
				if out, err := kubectl(cfg, args...); err != nil {
					t.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, out)
				}
			}
			return ctx
		}).
		Feature()
}

// rollOut applies a kustomization of the repository over the install
// (server-side, as the suite installs, with extra arguments such as
// --force-conflicts) and waits for the Deployment's rollout and a Ready
// operator.
func rollOut(ctx context.Context, t *testing.T, cfg *envconf.Config, dir string, extra ...string) {
	t.Helper()
	start := time.Now()
	if out, err := kubectl(cfg, append([]string{"apply", "--server-side", "-k", filepath.Join(root, dir)}, extra...)...); err != nil {
		t.Fatalf("kubectl apply -k %s: %v: %s", dir, err, out)
	}
	if out, err := kubectl(cfg, "rollout", "status", "-n", operatorNS, "deployment/"+operatorDeployment, "--timeout=3m"); err != nil {
		t.Fatalf("kubectl rollout status: %v: %s", err, out)
	}
	if err := waitOperatorReady(ctx, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s applied and rolled out in %s", dir, time.Since(start).Round(time.Millisecond))
}

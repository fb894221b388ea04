package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/app"
	"github.com/example/myoperator/internal/testenv"
)

// TestStorageMigration: Drinks stored in v1alpha1 by the previous release
// (no webhooks, v1alpha1 the storage version) are rewritten in v1 when the
// manager starts, and status.storedVersions is trimmed to ["v1"].
func TestStorageMigration(t *testing.T) {
	env, cfg, c := testenv.Start(t, testenv.Options{Webhooks: true})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	const n = 25
	previousRelease(t, env, c, "legacy", n)
	if err := testenv.StartManager(ctx, env, cfg, app.Options{Namespace: operatorNS, SeveralManagersPerProcess: true}); err != nil {
		t.Fatal(err)
	}
	waitStoredV1(t, c, 60*time.Second)

	// Storage-sensitive check: with the conversion webhook unreachable,
	// reading through v1 works only for objects stored as v1.
	breakConversion(t, c)
	list := &drinksv1.DrinkList{}
	if err := c.List(ctx, list, client.InNamespace("legacy")); err != nil {
		t.Fatalf("listing through v1 without a conversion webhook: %v (objects not stored as v1)", err)
	}
	if len(list.Items) != n {
		t.Fatalf("%d Drinks after migration, want %d", len(list.Items), n)
	}
	for _, d := range list.Items {
		if d.Spec.DisplayName == "" || d.Spec.Beverage != "tea" {
			t.Errorf("%s: spec not migrated: %+v", d.Name, d.Spec)
		}
		if got := d.Annotations[drinksv1.AuthoredVersionAnnotation]; got != "v1alpha1" {
			t.Errorf("%s: authored version %q, want v1alpha1 (the previous release's only version)", d.Name, got)
		}
	}
}

// TestStorageMigrationFailureDegrades: when the cluster refuses the
// migration's writes (here an admission policy that freezes Drinks), the
// manager keeps running, OperatorConfig says Degraded with reason
// StorageMigrationFailed and the refusal, storedVersions is left alone;
// once the writes are allowed the retry migrates and Degraded clears.
func TestStorageMigrationFailureDegrades(t *testing.T) {
	env, cfg, c := testenv.Start(t, testenv.Options{Webhooks: true})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	previousRelease(t, env, c, "frozen", 3)
	if err := c.Create(ctx, &operatorv1alpha1.OperatorConfig{ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName}}); err != nil {
		t.Fatal(err)
	}
	freeze := freezeDrinks(t, c)
	if err := testenv.StartManager(ctx, env, cfg, app.Options{Namespace: operatorNS, SeveralManagersPerProcess: true}); err != nil {
		t.Fatal(err)
	}
	degraded := func(want metav1.ConditionStatus, reason string) {
		t.Helper()
		testenv.Eventually(t, 90*time.Second, func() string {
			oc := &operatorv1alpha1.OperatorConfig{}
			if err := c.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, oc); err != nil {
				return err.Error()
			}
			cond := meta.FindStatusCondition(oc.Status.Conditions, operatorv1alpha1.ConditionDegraded)
			if cond == nil || cond.Status != want || (reason != "" && cond.Reason != reason) {
				return fmt.Sprintf("Degraded %+v, want %s %s", cond, want, reason)
			}
			if want == metav1.ConditionTrue && !strings.Contains(cond.Message, "Drinks are frozen") {
				return "Degraded message does not say why: " + cond.Message
			}
			return ""
		})
	}
	degraded(metav1.ConditionTrue, "StorageMigrationFailed")
	if got := storedVersions(t, c); len(got) != 2 {
		t.Errorf("storedVersions %v after a failed migration, want both versions kept", got)
	}
	if err := c.Delete(ctx, freeze); err != nil {
		t.Fatal(err)
	}
	waitStoredV1(t, c, 90*time.Second)
	degraded(metav1.ConditionFalse, "")
}

// previousRelease leaves what the previous release would: n Drinks in ns
// stored as v1alpha1 without an authored version (it had no webhooks),
// then installs the current CRD storage version and webhooks again.
func previousRelease(t *testing.T, env *envtest.Environment, c client.Client, ns string, n int) {
	t.Helper()
	ctx := context.Background()
	setStorage(t, c, "v1alpha1")
	for _, m := range env.WebhookInstallOptions.MutatingWebhooks {
		if err := c.Delete(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range env.WebhookInstallOptions.ValidatingWebhooks {
		if err := c.Delete(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := c.Create(ctx, &drinksv1alpha1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("old-%d", i)},
			Spec: drinksv1alpha1.DrinkSpec{Name: fmt.Sprintf("Old %d", i), Drink: "tea"}}); err != nil {
			t.Fatal(err)
		}
	}
	setStorage(t, c, "v1")
	for _, m := range env.WebhookInstallOptions.MutatingWebhooks {
		m.ResourceVersion = ""
		if err := c.Create(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range env.WebhookInstallOptions.ValidatingWebhooks {
		v.ResourceVersion = ""
		if err := c.Create(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	if got := storedVersions(t, c); len(got) != 2 {
		t.Fatalf("fixture: storedVersions %v, want v1alpha1 and v1", got)
	}
}

// freezeDrinks installs a ValidatingAdmissionPolicy that denies every
// update of a Drink, and waits until the API server enforces it. Deleting
// the returned binding lifts it.
func freezeDrinks(t *testing.T, c client.Client) client.Object {
	t.Helper()
	ctx := context.Background()
	// Policies load asynchronously. A Drink cannot probe that (any write
	// of one needs the conversion webhook, which runs only with the
	// manager), so the same policy also freezes one ConfigMap, the probe.
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "freeze-probe"}}
	if err := c.Create(ctx, probe); err != nil {
		t.Fatal(err)
	}
	update := admissionregistrationv1.Update
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "freeze-drinks"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: new(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
				{RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"*"}, Resources: []string{"drinks"}}}},
				{RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name: "drinks-or-probe", Expression: "request.resource.resource == 'drinks' || object.metadata.name == 'freeze-probe'",
			}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "Drinks are frozen"}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "freeze-drinks"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: policy.Name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	for _, o := range []client.Object{policy, binding} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 30*time.Second, func() string {
		if err := c.Get(ctx, client.ObjectKeyFromObject(probe), probe); err != nil {
			return err.Error()
		}
		probe.Data = map[string]string{"at": time.Now().Format("150405.000000")}
		if err := c.Update(ctx, probe); err == nil || !strings.Contains(err.Error(), "Drinks are frozen") {
			return fmt.Sprintf("update not refused yet: %v", err)
		}
		return ""
	})
	return binding
}

func waitStoredV1(t *testing.T, c client.Client, timeout time.Duration) {
	t.Helper()
	testenv.Eventually(t, timeout, func() string {
		if got := storedVersions(t, c); len(got) != 1 || got[0] != "v1" {
			return fmt.Sprintf("storedVersions still %v", got)
		}
		return ""
	})
}

func storedVersions(t *testing.T, c client.Client) []string {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: app.DrinkCRD}, crd); err != nil {
		t.Fatal(err)
	}
	return crd.Status.StoredVersions
}

func setStorage(t *testing.T, c client.Client, version string) {
	t.Helper()
	updateCRD(t, c, func(crd *apiextensionsv1.CustomResourceDefinition) {
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == version
		}
	})
}

func breakConversion(t *testing.T, c client.Client) {
	t.Helper()
	updateCRD(t, c, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Conversion.Webhook.ClientConfig.URL = new("https://127.0.0.1:1/convert")
	})
	// The API server picks up the CRD change asynchronously.
	time.Sleep(2 * time.Second)
}

func updateCRD(t *testing.T, c client.Client, mutate func(*apiextensionsv1.CustomResourceDefinition)) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: app.DrinkCRD}, crd); err != nil {
			return err
		}
		mutate(crd)
		return c.Update(context.Background(), crd)
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // let the API server serve the new definition
}

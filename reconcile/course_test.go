package reconcile_test

import (
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/test/framework/testenv"
)

// TestCourseDrinkStoredWithoutV1Fields: a Drink stored in the course's form
// (name and drink only), as the course's operator stored them before this
// one served the CRD, gets v1's displayName and beverage (BEVERAGE in
// kubectl get drinks) without a user's write: the reconciler writes it
// once, unchanged, and the mutating webhook fills them. The course's fields
// and the ConfigMap's course layout stay. While the webhook does not see
// the Drink, the reconciler renders it as usual and fills nothing.
func TestCourseDrinkStoredWithoutV1Fields(t *testing.T) {
	ns := namespace(t)
	key := client.ObjectKey{Namespace: ns, Name: "from-the-course"}
	// The mutating webhook skips this namespace while the Drink is
	// stored, as no webhook saw the course's writes.
	skipMutation(t, ns, true)
	course := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
		Spec: drinksv1.DrinkSpec{Name: "my-drink", Drink: "coffee", Size: drinksv1.SizeMedium}}
	if err := k8s.Create(testCtx, course); err != nil {
		t.Fatal(err)
	}
	courseLayout := map[string]string{"name": "my-drink", "drink": "coffee"}
	testenv.Eventually(t, 20*time.Second, converged(key, courseLayout))
	d := &drinksv1.Drink{}
	if err := k8s.Get(testCtx, key, d); err != nil {
		t.Fatal(err)
	}
	if d.Spec.Beverage != "" || d.Spec.DisplayName != "" {
		t.Fatalf("without the webhook the Drink got beverage %q, displayName %q: the test stores nothing in the course's form", d.Spec.Beverage, d.Spec.DisplayName)
	}

	skipMutation(t, ns, false)
	testenv.Eventually(t, 30*time.Second, func() string {
		d := &drinksv1.Drink{}
		if err := k8s.Get(testCtx, key, d); err != nil {
			return err.Error()
		}
		if d.Spec.Beverage == "coffee" && d.Spec.DisplayName == "my-drink" {
			return ""
		}
		// A reconcile comes on an event: the ConfigMap's deletion is one
		// (the API server may not yet call the webhook again).
		_ = k8s.Delete(testCtx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}})
		return fmt.Sprintf("beverage %q, displayName %q", d.Spec.Beverage, d.Spec.DisplayName)
	})
	if err := k8s.Get(testCtx, key, d); err != nil {
		t.Fatal(err)
	}
	if d.Spec.Name != "my-drink" || d.Spec.Drink != "coffee" || d.Spec.Size != drinksv1.SizeMedium {
		t.Errorf("spec after the write: %+v; the course's fields and the size must stay", d.Spec)
	}
	testenv.Eventually(t, 20*time.Second, converged(key, courseLayout))
}

// skipMutation makes the Drink mutating webhook skip namespace ns, or
// stops skipping it.
func skipMutation(t *testing.T, ns string, skip bool) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := k8s.Get(testCtx, client.ObjectKey{Name: names.MutatingWebhookConfig}, m); err != nil {
			return err
		}
		for i := range m.Webhooks {
			w := &m.Webhooks[i]
			if len(w.Rules) == 0 || len(w.Rules[0].Resources) == 0 || w.Rules[0].Resources[0] != "drinks" {
				continue
			}
			w.NamespaceSelector = nil
			if skip {
				w.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{ns}}}}
			}
		}
		return k8s.Update(testCtx, m)
	})
	if err != nil {
		t.Fatal(err)
	}
	// The API server follows webhook configurations through an informer.
	time.Sleep(2 * time.Second)
}

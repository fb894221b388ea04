package webhook_test

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
	drinksv1beta1 "github.com/example/myoperator/apis/drinks/v1beta1"
	"github.com/example/myoperator/test/framework/testenv"
)

// bypassLabel marks objects that the validating Drink webhook skips while
// skipValidation is in force.
const bypassLabel = "test.example.com/skip-validation"

// TestStoredBeforeTheRules: Drinks that today's rules reject but that were
// stored before them (here: written while the validating webhook let
// everything through, as it let v1 rules through older versions before)
// stay writable, like the API server ratchets CRD rules: labels and
// annotations change through every version, and so do fields that no broken
// rule reads. Changing the offending field is checked; fixing it is allowed.
func TestStoredBeforeTheRules(t *testing.T) {
	ns := namespace(t)
	repeats := &drinksv1alpha1.Drink{ObjectMeta: meta(ns, "repeats"), Spec: drinksv1alpha1.DrinkSpec{Name: "x", Drink: "tea"}}
	repeats.Annotations = map[string]string{drinksv1.ConversionDataAnnotation: `{"extras":["tea"]}`}
	crowded := &drinksv1alpha1.Drink{ObjectMeta: meta(ns, "crowded"), Spec: drinksv1alpha1.DrinkSpec{Name: "x", Drink: "tea"}}
	crowded.Annotations = map[string]string{drinksv1.ConversionDataAnnotation: `{"size":"Small","extras":["a","b","c","d"]}`}
	skipValidation(t, func() {
		for _, d := range []*drinksv1alpha1.Drink{repeats, crowded} {
			d.Labels = map[string]string{bypassLabel: "true"}
			testenv.Eventually(t, 10*time.Second, func() string {
				if err := k8s.Create(context.Background(), d.DeepCopy()); err != nil {
					return "creating a Drink that breaks a v1 rule while validation is off: " + err.Error()
				}
				return ""
			})
		}
	})
	ok := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	rejected := func(what string, err error, field string) {
		t.Helper()
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), field+":") {
			t.Errorf("%s: %v, want 422 naming %s", what, err, field)
		}
	}
	key := client.ObjectKeyFromObject

	ok("label through v1", update(key(repeats), &drinksv1.Drink{}, func(d *drinksv1.Drink) { d.Labels = map[string]string{"team": "a"} }))
	ok("annotation through v1alpha1, as a migration might add", update(key(repeats), &drinksv1alpha1.Drink{},
		func(d *drinksv1alpha1.Drink) { d.Annotations["example.com/migrated"] = "true" }))
	ok("label through v1beta1", update(key(crowded), &drinksv1beta1.Drink{}, func(d *drinksv1beta1.Drink) { d.Labels["team"] = "b" }))
	ok("sugar through v1beta1, which no broken rule reads", update(key(crowded), &drinksv1beta1.Drink{},
		func(d *drinksv1beta1.Drink) { d.Spec.Sugar = 2 }))
	rejected("another extra through v1", update(key(repeats), &drinksv1.Drink{},
		func(d *drinksv1.Drink) { d.Spec.Extras = append(d.Spec.Extras, "milk") }), "spec.extras")
	rejected("a fifth extra through v1", update(key(crowded), &drinksv1.Drink{},
		func(d *drinksv1.Drink) { d.Spec.Extras = append(d.Spec.Extras, "e") }), "spec.extras")
	ok("the beverage changed through v1alpha1, which mends the rule", update(key(repeats), &drinksv1alpha1.Drink{},
		func(d *drinksv1alpha1.Drink) { d.Spec.Drink = "coffee" }))
	ok("made Medium through v1beta1, which mends the rule", update(key(crowded), &drinksv1beta1.Drink{},
		func(d *drinksv1beta1.Drink) { d.Spec.Size = "Medium" }))

	got := &drinksv1.Drink{}
	mustGet(t, key(crowded), got)
	if got.Spec.SugarCubes != 2 || got.Spec.Size != drinksv1.SizeMedium || len(got.Spec.Extras) != 4 {
		t.Errorf("crowded Drink after the updates: %+v", got.Spec)
	}
}

// update reads key into obj, applies mutate and writes it back, again when
// the reconciler's status writes make it conflict, and returns the answer.
func update[T client.Object](key client.ObjectKey, obj T, mutate func(T)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(context.Background(), key, obj); err != nil {
			return err
		}
		mutate(obj)
		return k8s.Update(context.Background(), obj)
	})
}

// skipValidation makes the validating Drink webhook skip objects labelled
// bypassLabel while during runs, and waits until it checks them again.
func skipValidation(t *testing.T, during func()) {
	t.Helper()
	ctx := context.Background()
	setSelector := func(sel *metav1.LabelSelector) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			list := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
			if err := k8s.List(ctx, list); err != nil {
				return err
			}
			for i := range list.Items {
				cfg := &list.Items[i]
				for j := range cfg.Webhooks {
					if cfg.Webhooks[j].Name == "vdrink.example.com" {
						cfg.Webhooks[j].ObjectSelector = sel
						return k8s.Update(ctx, cfg)
					}
				}
			}
			t.Fatal("no validating webhook vdrink.example.com")
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	setSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: bypassLabel, Operator: metav1.LabelSelectorOpDoesNotExist},
	}})
	restored := false
	restore := func() {
		if !restored {
			restored = true
			setSelector(&metav1.LabelSelector{})
		}
	}
	t.Cleanup(restore)
	during()
	restore()
	// The API server sees the change shortly after: until then, a probe
	// that breaks a rule is still stored.
	probe := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "validation-probe", Labels: map[string]string{bypassLabel: "true"}},
		Spec: drinksv1.DrinkSpec{DisplayName: "x", Beverage: "tea", Size: drinksv1.SizeSmall, Extras: []string{"a", "b", "c", "d"}}}
	testenv.Eventually(t, 10*time.Second, func() string {
		err := k8s.Create(ctx, probe.DeepCopy())
		if err == nil {
			_ = k8s.Delete(ctx, probe)
			return "the validating webhook still skips labelled Drinks"
		}
		return ""
	})
}

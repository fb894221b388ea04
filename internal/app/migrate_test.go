package app_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
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

	// The previous release: v1alpha1 stores Drinks, and no admission
	// webhooks exist (so no authored version is recorded).
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
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "legacy"}}); err != nil {
		t.Fatal(err)
	}
	const n = 25
	for i := range n {
		if err := c.Create(ctx, &drinksv1alpha1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "legacy", Name: fmt.Sprintf("old-%d", i)},
			Spec: drinksv1alpha1.DrinkSpec{Name: fmt.Sprintf("Old %d", i), Drink: "tea"}}); err != nil {
			t.Fatal(err)
		}
	}

	// The current release: v1 storage, webhooks installed, manager started.
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
	wo := env.WebhookInstallOptions
	mgr, err := app.New(cfg, app.Options{
		Namespace: operatorNS, MetricsAddr: "0", SeveralManagersPerProcess: true, ProbeAddr: "0",
		WebhookHost: wo.LocalServingHost, WebhookPort: wo.LocalServingPort, CertDir: wo.LocalServingCertDir,
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager stopped: %v", err)
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for got := storedVersions(t, c); len(got) != 1 || got[0] != "v1"; got = storedVersions(t, c) {
		if time.Now().After(deadline) {
			t.Fatalf("storedVersions still %v after 60s", got)
		}
		time.Sleep(250 * time.Millisecond)
	}

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

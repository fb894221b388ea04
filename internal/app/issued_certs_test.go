package app_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
	"github.com/example/myoperator/internal/app"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/test/framework/certstest"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/framework/testutil"
)

// TestIssuedCertificate: with the certificate issued by someone else
// (cert-manager; here a Secret in the format its Certificate writes, and
// caBundles set as its cainjector sets them), the manager is not ready
// until the Secret holds a pair, then serves it from memory (no file in its
// certificate directory), serves a renewal within seconds with no failed
// request, and writes neither the Secret nor any caBundle.
func TestIssuedCertificate(t *testing.T) {
	env, cfg, c := testenv.Start(t, testenv.Options{Webhooks: true, WebhookHost: "localhost"})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, ns := range []string{operatorNS, "issued"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	ca, err := certstest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	injectCA(ctx, t, c, ca.PEM)

	probe, certDir := testutil.FreeAddr(t, env.WebhookInstallOptions.LocalServingPort), t.TempDir()
	wo := env.WebhookInstallOptions
	mgr, err := app.New(cfg, app.InProcess(app.Options{
		Namespace: operatorNS, MetricsAddr: "0", ProbeAddr: probe,
		WebhookHost: "127.0.0.1", WebhookPort: wo.LocalServingPort, CertDir: certDir,
		IssuedCertSecret: names.CertSecret,
	}))
	if err != nil {
		t.Fatal(err)
	}
	testenv.RunManager(ctx, t, mgr)

	time.Sleep(3 * time.Second)
	if ready(probe) {
		t.Fatal("ready before the Secret holds a certificate")
	}
	leaf, err := ca.Issue("localhost")
	if err != nil {
		t.Fatal(err)
	}
	secret := certstest.Secret(operatorNS, names.CertSecret, "myoperator-serving-cert", "myoperator-ca-issuer", ca, leaf)
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() string {
		if !ready(probe) {
			return "not ready with the issued Secret in place"
		}
		return ""
	})
	servesLeaf(t, wo.LocalServingPort, leaf)

	// Renew while writing through every webhook.
	renewed, err := ca.Issue("localhost")
	if err != nil {
		t.Fatal(err)
	}
	secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey] = renewed.CertPEM, renewed.KeyPEM
	if err := c.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	written := secret.ResourceVersion
	var requests, failures int
	start := time.Now()
	for i := 0; ; i++ {
		name := fmt.Sprintf("d-%d", i)
		requests += 2
		err := c.Create(ctx, &drinksv1alpha1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "issued", Name: name}, Spec: drinksv1alpha1.DrinkSpec{Name: "x", Drink: "tea"}})
		if err == nil {
			err = c.Get(ctx, client.ObjectKey{Namespace: "issued", Name: name}, &drinksv1.Drink{})
		}
		if err != nil {
			failures++
			t.Errorf("request failed across the renewal: %v", err)
		}
		if fp, err := servedFingerprint(wo.LocalServingPort); err == nil && fp == fingerprint(renewed) {
			break
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("the renewal is not served after 20s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("renewal served after %s; %d requests, %d failed", time.Since(start).Round(time.Millisecond), requests, failures)
	servesLeaf(t, wo.LocalServingPort, renewed)

	// Nothing written by the manager: the Secret, the caBundles, the files.
	time.Sleep(2 * time.Second)
	if err := c.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil || secret.ResourceVersion != written {
		t.Errorf("the manager wrote the issued Secret (resourceVersion %s, wrote %s; %v)", secret.ResourceVersion, written, err)
	}
	if msg := caBundles(ctx, c, ca.PEM); msg != "" {
		t.Errorf("the manager changed a caBundle: %s", msg)
	}
	if files, err := os.ReadDir(certDir); err != nil || len(files) > 0 {
		t.Errorf("the manager wrote into its certificate directory: %v (%v)", files, err)
	}
}

func fingerprint(l *certstest.Leaf) string { return fmt.Sprintf("%x", sha256.Sum256(l.Cert.Raw)) }

func servesLeaf(t *testing.T, port int, l *certstest.Leaf) {
	t.Helper()
	for range 5 {
		if fp, err := servedFingerprint(port); err != nil || fp != fingerprint(l) {
			t.Fatalf("not serving leaf %s (%v)", l.Serial(), err)
		}
	}
}

// injectCA does what cert-manager's cainjector does for the manager's
// objects: the CA into every webhook's and the Drink conversion's
// caBundle.
func injectCA(ctx context.Context, t *testing.T, c client.Client, caPEM []byte) {
	t.Helper()
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	for _, step := range []func() error{
		func() error { return c.Get(ctx, client.ObjectKey{Name: names.MutatingWebhookConfig}, m) },
		func() error {
			for i := range m.Webhooks {
				m.Webhooks[i].ClientConfig.CABundle = caPEM
			}
			return c.Update(ctx, m)
		},
		func() error { return c.Get(ctx, client.ObjectKey{Name: names.ValidatingWebhookConfig}, v) },
		func() error {
			for i := range v.Webhooks {
				v.Webhooks[i].ClientConfig.CABundle = caPEM
			}
			return c.Update(ctx, v)
		},
		func() error { return c.Get(ctx, client.ObjectKey{Name: names.DrinkCRD}, crd) },
		func() error {
			crd.Spec.Conversion.Webhook.ClientConfig.CABundle = caPEM
			return c.Update(ctx, crd)
		},
	} {
		if err := step(); err != nil {
			t.Fatalf("injecting the CA: %v", err)
		}
	}
}

// caBundles says which caBundle is not caPEM; "" when all are.
func caBundles(ctx context.Context, c client.Client, caPEM []byte) string {
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: names.MutatingWebhookConfig}, m); err != nil {
		return err.Error()
	}
	if err := c.Get(ctx, client.ObjectKey{Name: names.ValidatingWebhookConfig}, v); err != nil {
		return err.Error()
	}
	if err := c.Get(ctx, client.ObjectKey{Name: names.DrinkCRD}, crd); err != nil {
		return err.Error()
	}
	bundles := map[string][]byte{"conversion": crd.Spec.Conversion.Webhook.ClientConfig.CABundle}
	for _, w := range m.Webhooks {
		bundles[w.Name] = w.ClientConfig.CABundle
	}
	for _, w := range v.Webhooks {
		bundles[w.Name] = w.ClientConfig.CABundle
	}
	for name, b := range bundles {
		if string(b) != string(caPEM) {
			return name
		}
	}
	return ""
}

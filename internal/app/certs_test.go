package app_test

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
	drinksv1beta1 "github.com/example/myoperator/apis/drinks/v1beta1"
	"github.com/example/myoperator/internal/app"
	"github.com/example/myoperator/internal/logging"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/framework/testutil"
)

const operatorNS = "myoperator-system"

// TestCertificateRotation: the manager creates its CA and serving
// certificate, injects the CA into the CRD and webhook configurations, and
// renews the certificate every few seconds (a 40 s validity, renewed 32 s
// before expiry); conversion and admission keep succeeding throughout.
func TestCertificateRotation(t *testing.T) {
	env, cfg, c := testenv.Start(t, testenv.Options{Webhooks: true, WebhookHost: "localhost"})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, ns := range []string{operatorNS, "rotation"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	// Installed empty by config/ (the rotator fills it, never creates it).
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: names.CertSecret}}); err != nil {
		t.Fatal(err)
	}
	probe := testutil.FreeAddr(t, env.WebhookInstallOptions.LocalServingPort)
	wo := env.WebhookInstallOptions
	mgr, err := app.New(cfg, app.InProcess(app.Options{
		Namespace: operatorNS, MetricsAddr: "0", ProbeAddr: probe,
		WebhookHost: "127.0.0.1", WebhookPort: wo.LocalServingPort, CertDir: t.TempDir(),
		Certs: &app.CertOptions{
			ExtraDNSNames: []string{"localhost"},
			CAValidity:    time.Hour, CertValidity: 40 * time.Second, Lookahead: 32 * time.Second, CheckEvery: time.Second,
		},
	}))
	if err != nil {
		t.Fatal(err)
	}
	testenv.RunManager(ctx, t, mgr)

	// Ready only once the certificates are written, injected and served.
	start := time.Now()
	for !ready(probe) {
		if time.Since(start) > 60*time.Second {
			t.Fatal("manager not ready after 60s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("ready after %s", time.Since(start).Round(time.Millisecond))

	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: names.CertSecret}, secret); err != nil {
		t.Fatalf("certificate Secret: %v", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: names.DrinkCRD}, crd); err != nil {
		t.Fatal(err)
	}
	if got := crd.Spec.Conversion.Webhook.ClientConfig.CABundle; string(got) != string(secret.Data["ca.crt"]) {
		t.Fatalf("the Drink CRD's caBundle is not the operator's CA")
	}

	// Write and read through every webhook for 30 s while the certificate
	// rotates; record each certificate the server presents.
	fingerprints := map[string]bool{}
	var requests, failures int
	end := time.Now().Add(30 * time.Second)
	for i := 0; time.Now().Before(end); i++ {
		if s, err := servedFingerprint(wo.LocalServingPort); err == nil {
			fingerprints[s] = true
		}
		name := fmt.Sprintf("d-%d", i)
		requests++
		err := c.Create(ctx, &drinksv1alpha1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "rotation", Name: name},
			Spec: drinksv1alpha1.DrinkSpec{Name: "x", Drink: "tea"}})
		if err == nil {
			requests++
			err = c.Get(ctx, client.ObjectKey{Namespace: "rotation", Name: name}, &drinksv1beta1.Drink{})
		}
		if err != nil {
			failures++
			t.Errorf("request failed during rotation (fingerprints so far %d): %v", len(fingerprints), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d requests, %d failed, %d distinct serving certificates", requests, failures, len(fingerprints))
	if len(fingerprints) < 2 {
		t.Errorf("the serving certificate never rotated (%d certificate seen)", len(fingerprints))
	}
}

func ready(addr string) bool {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func servedFingerprint(port int) (string, error) {
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reads the served certificate's serial.
	if err != nil {
		return "", err
	}
	defer func() { _ = conn.Close() }()
	return fmt.Sprintf("%x", sha256.Sum256(conn.ConnectionState().PeerCertificates[0].Raw)), nil
}

func TestMain(m *testing.M) {
	log, _ := logging.New(true)
	ctrl.SetLogger(log)
	os.Exit(m.Run())
}

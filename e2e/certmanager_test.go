//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
	"github.com/example/myoperator/test/framework/testenv"
)

// The objects config/certmanager names.
const (
	certManagerNS    = "e2e-certmanager"
	servingCert      = "myoperator-serving-cert"
	servingSecret    = "myoperator-webhook-server-cert"
	caIssuer         = "myoperator-ca-issuer"
	caSecret         = "myoperator-ca" // the CA Certificate's, which the CA issuer signs with
	mutatingConfig   = "myoperator-mutating-webhook-configuration"
	validatingConfig = "myoperator-validating-webhook-configuration"
)

// certManagerIssues: the operator installed with config/certmanager (on
// top of config/default) serves every webhook and the conversion with the
// certificate that cert-manager's own controllers issue and the CA that
// cert-manager's own cainjector injects, read through the API; a renewal
// (what cmctl renew does) is served without one failed request and keeps
// the CA. cert-manager runs from the packages of its root module
// (bin/cert-manager-<version>, hack/tools/certmanager).
func certManagerIssues() features.Feature {
	var cm *certManager
	return features.New("cert-manager issues the webhook certificate").WithLabel("area", "certmanager").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			uninstall(t, cfg)
			var err error
			if cm, err = startCertManager(cfg); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if out, err := kubectl(cfg, "apply", "--server-side", "-k", cm.overlay); err != nil {
				t.Fatalf("kubectl apply -k %s + config/certmanager: %v: %s", installedConfig(), err, out)
			}
			if err := waitOperatorReady(ctx, 3*time.Minute); err != nil {
				t.Fatal(err)
			}
			fmt.Printf("e2e: installed with config/certmanager; operator ready %s after the apply\n", time.Since(start).Round(time.Millisecond))
			return ctx
		}).
		Assess("every webhook and the conversion served with cert-manager's leaf and CA", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			issued := readIssued(ctx, t)
			fmt.Printf("e2e: cert-manager issued leaf serial %s (%v), CA %q serial %s\n", issued.serial(), issued.leaf.DNSNames, issued.ca.Subject.CommonName, issued.ca.SerialNumber.Text(16))
			testenv.Eventually(t, 60*time.Second, func() string { return caBundlesAre(ctx, issued.caPEM) })
			testenv.Eventually(t, 30*time.Second, func() string { return servedSerial(issued.ca, issued.serial()) })
			d := &drinksv1alpha1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: certManagerNS, Name: "through-alpha"}, Spec: drinksv1alpha1.DrinkSpec{Name: "Tea", Drink: "tea"}}
			if err := kc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: certManagerNS}}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
			if err := kc.Create(ctx, d); err != nil {
				t.Fatalf("a Drink through v1alpha1 (mutating, validating and conversion webhooks): %v", err)
			}
			got := &drinksv1.Drink{}
			if err := kc.Get(ctx, client.ObjectKeyFromObject(d), got); err != nil || got.Spec.Beverage != "tea" {
				t.Fatalf("the Drink read through v1 (conversion webhook): %+v, %v", got.Spec, err)
			}
			fmt.Printf("e2e: the caBundle of every webhook and of the Drink conversion is cert-manager's CA; the webhook endpoint presents leaf %s; a Drink written through v1alpha1 reads through v1 as beverage %q\n", issued.serial(), got.Spec.Beverage)
			return ctx
		}).
		Assess("a renewal under load: 0 failed requests, the CA kept", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			before := readIssued(ctx, t)
			// The CA the renewal must keep is the one the issuer signs
			// with now, in its Secret. cert-manager can issue the CA
			// Certificate a second time right after the first (seen once,
			// a second revision within a second): the first leaf then
			// carries the CA before it, and the renewal rightly moves
			// every caBundle to the issuer's CA.
			ca := readIssuerCA(ctx, t)
			if !ca.Equal(before.ca) {
				fmt.Printf("e2e: cert-manager issued the CA again after the first leaf: the leaf's ca.crt is CA serial %s, the issuer's Secret %s holds another\n",
					before.ca.SerialNumber.Text(16), caSecret)
			}
			errorsBefore, err := apiserverWebhookErrors(ctx)
			if err != nil {
				t.Fatal(err)
			}
			load := startLoad(ctx, t, certManagerNS)
			time.Sleep(3 * time.Second)
			renewed := time.Now()
			if err := renew(ctx, servingCert); err != nil {
				t.Fatal(err)
			}
			var after issuedCert
			testenv.Eventually(t, 60*time.Second, func() string {
				after = readIssued(ctx, t)
				if after.serial() == before.serial() {
					return "the Secret still holds leaf " + before.serial()
				}
				return ""
			})
			issuedIn := time.Since(renewed)
			testenv.Eventually(t, 30*time.Second, func() string { return servedSerial(after.ca, after.serial()) })
			servedIn := time.Since(renewed)
			time.Sleep(3 * time.Second)
			report := load.Stop()
			errorsAfter, err := apiserverWebhookErrors(ctx)
			if err != nil {
				t.Fatal(err)
			}
			grew := errorsAfter.Sub(errorsBefore)
			fmt.Printf("e2e: renewal: leaf %s -> %s, in the Secret %s and served %s after the Issuing condition was set; CA serial %s -> %s\n",
				before.serial(), after.serial(), issuedIn.Round(time.Millisecond), servedIn.Round(time.Millisecond), before.ca.SerialNumber.Text(16), after.ca.SerialNumber.Text(16))
			fmt.Printf("e2e: load across the renewal: %s\n", report)
			fmt.Printf("e2e: API server webhook errors during the load: %g (%s)\n", grew.Total(), grew)
			if !after.ca.Equal(ca) || !readIssuerCA(ctx, t).Equal(ca) {
				t.Errorf("the renewal changed the CA: serial %s -> %s", ca.SerialNumber.Text(16), after.ca.SerialNumber.Text(16))
			}
			if msg := caBundlesAre(ctx, after.caPEM); msg != "" {
				t.Errorf("after the renewal: %s", msg)
			}
			if report.Requests == 0 || report.Failures != 0 {
				t.Errorf("load across the renewal: %d requests, %d failed", report.Requests, report.Failures)
			}
			if grew.Total() != 0 {
				t.Errorf("the API server counted webhook errors during the renewal: %s", grew)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if cm == nil {
				return ctx
			}
			if out, err := kubectl(cfg, "delete", "--ignore-not-found", "--wait=true", "--timeout=3m", "namespace", certManagerNS); err != nil {
				t.Errorf("deleting %s: %v: %s", certManagerNS, err, out)
			}
			// config/default's objects include the namespace that holds the
			// cert-manager objects the component added.
			uninstall(t, cfg)
			cm.stop(t, cfg)
			// The normal install again, as the suite made it.
			installAndWait(ctx, t, cfg)
			return ctx
		}).
		Feature()
}

// certManager is cert-manager running for the feature: its CRDs applied
// from the module hack/tools/certmanager requires, the launcher process, and the
// overlay the operator is installed from.
type certManager struct {
	crds, overlay string
	cmd           *exec.Cmd
	done          chan error
	log           *os.File
}

// startCertManager applies cert-manager's CRDs (deploy/crds of the module
// in the module cache), starts bin/cert-manager-<version>/cert-manager
// (make cert-manager) on the suite's kubeconfig and writes the overlay:
// the suite's install with config/certmanager.
func startCertManager(cfg *envconf.Config) (*certManager, error) {
	out, err := exec.Command("go", "-C", filepath.Join(root, "hack", "tools"), "list", "-m", "-f", "{{.Version}} {{.Dir}}", "github.com/cert-manager/cert-manager").Output()
	if err != nil {
		return nil, fmt.Errorf("finding cert-manager's module (make cert-manager downloads it): %w", err)
	}
	version, dir, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	cm := &certManager{crds: filepath.Join(dir, "deploy", "crds"), overlay: filepath.Join(root, "bin", runName+"-certmanager"), done: make(chan error, 1)}
	if out, err := kubectl(cfg, "apply", "--server-side", "-f", cm.crds); err != nil {
		return nil, fmt.Errorf("cert-manager's CRDs: %w: %s", err, out)
	}
	if out, err := kubectl(cfg, "wait", "--for=condition=Established", "--timeout=60s", "crd", "certificates.cert-manager.io", "certificaterequests.cert-manager.io", "issuers.cert-manager.io", "clusterissuers.cert-manager.io"); err != nil {
		return nil, fmt.Errorf("cert-manager's CRDs: %w: %s", err, out)
	}
	if err := os.MkdirAll(cm.overlay, 0o755); err != nil {
		return nil, err
	}
	overlay := `# Written by the e2e suite (area=certmanager).
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../../` + installedConfig() + `
components:
- ../../config/certmanager
`
	if err := os.WriteFile(filepath.Join(cm.overlay, "kustomization.yaml"), []byte(overlay), 0o644); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	if cm.log, err = os.Create(filepath.Join(logDir, "cert-manager.log")); err != nil {
		return nil, err
	}
	bin := filepath.Join(root, "bin", "cert-manager-"+version, "cert-manager")
	cm.cmd = exec.Command(bin, "--kubeconfig", cfg.KubeconfigFile())
	cm.cmd.Stdout, cm.cmd.Stderr = cm.log, cm.log
	if err := cm.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s (make cert-manager builds it): %w", bin, err)
	}
	go func() { cm.done <- cm.cmd.Wait() }()
	fmt.Printf("e2e: cert-manager %s: CRDs from %s, controllers and cainjector from %s (pid %d, log %s)\n", version, cm.crds, bin, cm.cmd.Process.Pid, cm.log.Name())
	return cm, nil
}

// stop ends the launcher and removes cert-manager's CRDs (and with them
// any cert-manager object left).
func (cm *certManager) stop(t *testing.T, cfg *envconf.Config) {
	t.Helper()
	_ = cm.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-cm.done:
		fmt.Printf("e2e: cert-manager stopped (%v)\n", err)
	case <-time.After(30 * time.Second):
		_ = cm.cmd.Process.Kill()
		t.Errorf("cert-manager did not stop within 30s of SIGTERM; killed (%v)", <-cm.done)
	}
	_ = cm.log.Close()
	if out, err := kubectl(cfg, "delete", "--ignore-not-found", "--wait=true", "--timeout=2m", "-f", cm.crds); err != nil {
		t.Errorf("deleting cert-manager's CRDs: %v: %s", err, out)
	}
}

// issuedCert is what the serving Secret holds, in the format cert-manager
// writes: tls.crt (the leaf), tls.key, ca.crt (the root) and the
// cert-manager.io annotations.
type issuedCert struct {
	leaf, ca *x509.Certificate
	caPEM    []byte
}

func (c issuedCert) serial() string { return c.leaf.SerialNumber.Text(16) }

// readIssued reads the serving Secret and checks that cert-manager issued
// it from the CA Issuer: the leaf signed by ca.crt, a self-signed CA.
func readIssued(ctx context.Context, t *testing.T) issuedCert {
	t.Helper()
	s := &corev1.Secret{}
	if err := kc.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: servingSecret}, s); err != nil {
		t.Fatalf("the serving Secret: %v", err)
	}
	if s.Type != corev1.SecretTypeTLS || s.Annotations["cert-manager.io/certificate-name"] != servingCert || s.Annotations["cert-manager.io/issuer-name"] != caIssuer {
		t.Fatalf("Secret %s is not cert-manager's for %s from %s: type %s, annotations %v", servingSecret, servingCert, caIssuer, s.Type, s.Annotations)
	}
	leaf, err := parsePEM(s.Data[corev1.TLSCertKey])
	if err != nil {
		t.Fatalf("tls.crt: %v", err)
	}
	ca, err := parsePEM(s.Data["ca.crt"])
	if err != nil {
		t.Fatalf("ca.crt: %v", err)
	}
	if !ca.IsCA || ca.CheckSignatureFrom(ca) != nil {
		t.Fatalf("ca.crt %q is not a self-signed CA", ca.Subject)
	}
	if err := leaf.CheckSignatureFrom(ca); err != nil {
		t.Fatalf("the leaf is not signed by ca.crt: %v", err)
	}
	return issuedCert{leaf: leaf, ca: ca, caPEM: s.Data["ca.crt"]}
}

// readIssuerCA is the CA certificate the CA issuer signs with: its
// Secret's tls.crt.
func readIssuerCA(ctx context.Context, t *testing.T) *x509.Certificate {
	t.Helper()
	s := &corev1.Secret{}
	if err := kc.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: caSecret}, s); err != nil {
		t.Fatalf("the CA issuer's Secret: %v", err)
	}
	ca, err := parsePEM(s.Data[corev1.TLSCertKey])
	if err != nil {
		t.Fatalf("the CA issuer's Secret %s: tls.crt: %v", caSecret, err)
	}
	return ca
}

func parsePEM(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("no PEM block")
	}
	return x509.ParseCertificate(block.Bytes)
}

// caBundlesAre says how the caBundle of every webhook of both
// configurations and of the Drink CRD's conversion differs from caPEM; ""
// when none does.
func caBundlesAre(ctx context.Context, caPEM []byte) string {
	bundles := map[string][]byte{}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := kc.Get(ctx, client.ObjectKey{Name: mutatingConfig}, m); err != nil {
		return err.Error()
	}
	for _, w := range m.Webhooks {
		bundles["mutating "+w.Name] = w.ClientConfig.CABundle
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := kc.Get(ctx, client.ObjectKey{Name: validatingConfig}, v); err != nil {
		return err.Error()
	}
	for _, w := range v.Webhooks {
		bundles["validating "+w.Name] = w.ClientConfig.CABundle
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := kc.Get(ctx, client.ObjectKey{Name: "drinks.example.com"}, crd); err != nil {
		return err.Error()
	}
	if c := crd.Spec.Conversion; c != nil && c.Webhook != nil && c.Webhook.ClientConfig != nil {
		bundles["conversion of drinks.example.com"] = c.Webhook.ClientConfig.CABundle
	} else {
		bundles["conversion of drinks.example.com"] = nil
	}
	var wrong []string
	for name, b := range bundles {
		if !bytes.Equal(b, caPEM) {
			wrong = append(wrong, name)
		}
	}
	if len(wrong) > 0 {
		return fmt.Sprintf("caBundle not cert-manager's CA in %d of %d: %s", len(wrong), len(bundles), strings.Join(wrong, ", "))
	}
	return ""
}

// servedSerial says how what the webhook Service presents differs from the
// leaf with serial want, verified against ca for the Service's name as the
// API server does; "" when ten handshakes in a row present it. They go
// where the API server calls (webhookAddrs): the ClusterIP through
// kube-proxy or the suite's stand-in, or with aggregator routing each
// ready endpoint of the Service in turn.
func servedSerial(ca *x509.Certificate, want string) string {
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	name := webhookService + "." + operatorNS + ".svc"
	addrs, err := webhookAddrs(context.Background())
	if err != nil {
		return err.Error()
	}
	for i := range 10 {
		addr := addrs[i%len(addrs)]
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: name, MinVersion: tls.VersionTLS12})
		if err != nil {
			return "handshake: " + err.Error()
		}
		got := conn.ConnectionState().PeerCertificates[0].SerialNumber.Text(16)
		_ = conn.Close()
		if got != want {
			return fmt.Sprintf("served leaf %s, want %s", got, want)
		}
	}
	return ""
}

// renew asks cert-manager to issue the Certificate again, as cmctl renew
// does: the Issuing condition set True through the status subresource.
func renew(ctx context.Context, name string) error {
	c := &unstructured.Unstructured{}
	c.SetAPIVersion("cert-manager.io/v1")
	c.SetKind("Certificate")
	if err := kc.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: name}, c); err != nil {
		return err
	}
	conds, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions")
	kept := conds[:0]
	for _, cond := range conds {
		if m, ok := cond.(map[string]any); !ok || m["type"] != "Issuing" {
			kept = append(kept, cond)
		}
	}
	kept = append(kept, map[string]any{
		"type": "Issuing", "status": "True", "reason": "ManuallyTriggered",
		"message": "Certificate re-issuance manually triggered", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		"observedGeneration": c.GetGeneration(),
	})
	if err := unstructured.SetNestedSlice(c.Object, kept, "status", "conditions"); err != nil {
		return err
	}
	return kc.Status().Update(ctx, c)
}

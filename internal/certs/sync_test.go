package certs_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/myoperator/internal/certs"
	"github.com/example/myoperator/test/framework/certstest"
	"github.com/example/myoperator/test/framework/testenv"
)

// TestSyncerServesTheSecret: the Syncer serves what the Secret on a real API
// server holds, in cert-manager's format: nothing (and not Loaded) until a
// valid pair is there, each renewal as soon as it is read, and the last
// good certificate when a write leaves a broken pair.
func TestSyncerServesTheSecret(t *testing.T) {
	_, _, c := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	ns := "certs"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	ca, err := certstest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	var leaves []*certstest.Leaf
	for range 3 {
		l, err := ca.Issue("localhost")
		if err != nil {
			t.Fatal(err)
		}
		leaves = append(leaves, l)
	}
	issued := func(l *certstest.Leaf) *corev1.Secret {
		return certstest.Secret(ns, "serving", "serving", "ca-issuer", ca, l)
	}
	broken := issued(leaves[2])
	broken.Data[corev1.TLSPrivateKeyKey] = leaves[0].KeyPEM

	for where, dir := range map[string]string{"no Dir": "", "with Dir": t.TempDir()} {
		s := &certs.Syncer{Reader: c, Secret: types.NamespacedName{Namespace: ns, Name: "serving"}, Dir: dir, Log: logr.Discard()}
		steps := []struct {
			name    string
			secret  *corev1.Secret // nil: no Secret
			wantErr bool
			served  *certstest.Leaf // nil: nothing served
		}{
			{name: "no Secret yet"},
			{name: "the empty Secret config/ installs for the rotator", secret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "serving"}}},
			{name: "issued", secret: issued(leaves[0]), served: leaves[0]},
			{name: "renewed", secret: issued(leaves[1]), served: leaves[1]},
			{name: "a key that does not match keeps the last good pair", secret: broken, wantErr: true, served: leaves[1]},
		}
		for _, st := range steps {
			t.Run(where+": "+st.name, func(t *testing.T) {
				if st.secret != nil {
					put(ctx, t, c, st.secret)
				}
				if err := s.SyncOnce(ctx); (err != nil) != st.wantErr {
					t.Fatalf("SyncOnce: %v, want error %t", err, st.wantErr)
				}
				got, err := s.GetCertificate(nil)
				loaded := isClosed(s.Loaded())
				if st.served == nil {
					if err == nil || loaded {
						t.Fatalf("serves a certificate (loaded %t) before a valid pair is in the Secret", loaded)
					}
					return
				}
				if err != nil || !loaded || !bytes.Equal(got.Certificate[0], st.served.Cert.Raw) {
					t.Fatalf("not serving leaf %s (loaded %t, %v)", st.served.Serial(), loaded, err)
				}
				file, err := os.ReadFile(filepath.Join(dir, corev1.TLSCertKey))
				switch {
				case dir == "" && !os.IsNotExist(err):
					t.Fatalf("wrote %s without a Dir: %v", corev1.TLSCertKey, err)
				case dir != "" && !st.wantErr && !bytes.Equal(file, st.served.CertPEM):
					t.Fatalf("%s in Dir is not the served leaf (%v)", corev1.TLSCertKey, err)
				}
			})
		}
		if err := c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "serving"}}); err != nil {
			t.Fatal(err)
		}
	}
}

// put creates or replaces the Secret; a Secret's type cannot change, so a
// different type means a new Secret.
func put(ctx context.Context, t *testing.T, c client.Client, s *corev1.Secret) {
	t.Helper()
	old := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKeyFromObject(s), old)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		t.Fatal(err)
	case old.Type != typeOf(s):
		if err := c.Delete(ctx, old); err != nil {
			t.Fatal(err)
		}
	default:
		s = s.DeepCopy()
		s.ResourceVersion = old.ResourceVersion
		if err := c.Update(ctx, s); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := c.Create(ctx, s.DeepCopy()); err != nil {
		t.Fatal(err)
	}
}

// typeOf is the Secret's type as the API server stores it.
func typeOf(s *corev1.Secret) corev1.SecretType {
	if s.Type == "" {
		return corev1.SecretTypeOpaque
	}
	return s.Type
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// TestSyncerServesExtraIPs: with IPs, the Syncer serves the rotator's leaf
// signed again from the rotator's CA with those IP SANs added: a client
// that dials the IP, as kube-apiserver dials make run's address on a kind
// network, verifies it against the CA; its key is the Secret's and a
// renewal is served again. cert-manager's Secret holds no CA key: nothing
// is served, and the error names ca.key.
func TestSyncerServesExtraIPs(t *testing.T) {
	_, _, c := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	ns := "certs-ips"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	ca, err := certstest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	ip := net.ParseIP("10.250.0.1")
	name := types.NamespacedName{Namespace: ns, Name: "serving"}

	t.Run("cert-manager's Secret", func(t *testing.T) {
		leaf, err := ca.Issue("localhost")
		if err != nil {
			t.Fatal(err)
		}
		put(ctx, t, c, certstest.Secret(ns, name.Name, "serving", "ca-issuer", ca, leaf))
		s := &certs.Syncer{Reader: c, Secret: name, Log: logr.Discard(), IPs: []net.IP{ip}}
		if err := s.SyncOnce(ctx); err == nil || !strings.Contains(err.Error(), "ca.key") {
			t.Fatalf("SyncOnce: %v, want an error naming ca.key", err)
		}
		if _, err := s.GetCertificate(nil); err == nil {
			t.Fatal("serves a certificate without IP SANs")
		}
	})

	s := &certs.Syncer{Reader: c, Secret: name, Log: logr.Discard(), IPs: []net.IP{ip}}
	for _, step := range []string{"issued", "renewed"} {
		t.Run("the rotator's Secret "+step, func(t *testing.T) {
			leaf, err := ca.Issue("myoperator-webhook-service.myoperator-system.svc", "localhost")
			if err != nil {
				t.Fatal(err)
			}
			secret, err := certstest.RotatorSecret(ns, name.Name, ca, leaf)
			if err != nil {
				t.Fatal(err)
			}
			put(ctx, t, c, secret)
			if err := s.SyncOnce(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := s.GetCertificate(nil)
			if err != nil {
				t.Fatal(err)
			}
			served, err := x509.ParseCertificate(got.Certificate[0])
			if err != nil {
				t.Fatal(err)
			}
			roots := x509.NewCertPool()
			roots.AddCert(ca.Cert)
			for _, host := range []string{ip.String(), "localhost", "myoperator-webhook-service.myoperator-system.svc"} {
				if _, err := served.Verify(x509.VerifyOptions{DNSName: host, Roots: roots}); err != nil {
					t.Errorf("the served leaf for %s: %v", host, err)
				}
			}
			if _, err := served.Verify(x509.VerifyOptions{DNSName: "10.250.0.9", Roots: roots}); err == nil {
				t.Error("the served leaf is valid for 10.250.0.9, an address it was not given")
			}
			if !served.NotAfter.Equal(leaf.Cert.NotAfter) {
				t.Errorf("served leaf expires %s (Secret's %s)", served.NotAfter, leaf.Cert.NotAfter)
			}
			if _, err := tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: got.Certificate[0]}), leaf.KeyPEM); err != nil {
				t.Errorf("the served leaf does not go with the Secret's key: %v", err)
			}
		})
	}
}

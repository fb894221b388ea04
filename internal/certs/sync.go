package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Syncer loads the serving certificate from the Secret whenever it changes
// and serves it to the webhook server from memory (GetCertificate); with a
// Dir it also writes tls.crt and tls.key there, where the manager's own
// rotator checks that they exist. The manager does this itself instead of
// mounting the Secret: a kubelet refreshes a mounted Secret only every
// minute or so, which would let the API server meet an expired certificate
// right after a renewal, and no kubelet runs the operator in the project's
// e2e clusters.
type Syncer struct {
	// Reader is a cached reader scoped to the Secret's namespace.
	Reader client.Reader
	Secret types.NamespacedName
	// Dir, when set, receives tls.crt and tls.key; empty writes no file.
	Dir   string
	Every time.Duration
	Log   logr.Logger
	// IPs, when set, are served as IP SANs besides the Secret's names: the
	// leaf is signed again from the Secret's CA (withIPs), so only with
	// the manager's own rotator, whose Secret holds the CA key.
	IPs []net.IP

	current atomic.Pointer[tls.Certificate]
	// source is the DER of the Secret's leaf that current was made from
	// (with IPs, current is another leaf); only SyncOnce touches it.
	source     []byte
	loadedOnce sync.Once
	closeOnce  sync.Once
	loaded     chan struct{}
}

// Loaded is closed once the Syncer serves a certificate from the Secret:
// readiness when someone else (cert-manager) issues it.
func (s *Syncer) Loaded() <-chan struct{} {
	s.loadedOnce.Do(func() { s.loaded = make(chan struct{}) })
	return s.loaded
}

// GetCertificate returns the current serving certificate, for
// tls.Config.GetCertificate.
func (s *Syncer) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := s.current.Load(); c != nil {
		return c, nil
	}
	return nil, errors.New("no webhook serving certificate yet")
}

// NeedLeaderElection returns false: every replica serves webhooks.
func (s *Syncer) NeedLeaderElection() bool { return false }

// Start syncs until the context ends.
func (s *Syncer) Start(ctx context.Context) error {
	if s.Dir != "" {
		if err := os.MkdirAll(s.Dir, 0o700); err != nil {
			return fmt.Errorf("creating certificate directory %s: %w", s.Dir, err)
		}
	}
	every := s.Every
	if every == 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := s.SyncOnce(ctx); err != nil {
			s.Log.Error(err, "writing the webhook certificate")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// SyncOnce serves the Secret's certificate and key when they differ from
// the ones served, and writes them when they differ from the files. The key
// is written first: a watcher that sees the certificate change then loads a
// matching pair.
func (s *Syncer) SyncOnce(ctx context.Context) error {
	secret := &corev1.Secret{}
	if err := s.Reader.Get(ctx, s.Secret, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // not issued yet
		}
		return err
	}
	cert, key := secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey]
	if len(cert) == 0 || len(key) == 0 {
		return nil
	}
	if s.current.Load() == nil || !bytes.Equal(s.source, firstDER(cert)) {
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return fmt.Errorf("secret %s holds no valid key pair: %w", s.Secret, err)
		}
		served := &pair
		if len(s.IPs) > 0 {
			if served, err = withIPs(pair, secret.Data[caCertKey], secret.Data[caKeyKey], s.IPs); err != nil {
				return fmt.Errorf("secret %s: %w", s.Secret, err)
			}
		}
		s.current.Store(served)
		s.source = firstDER(cert)
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		if err == nil {
			expiry.Set(float64(leaf.NotAfter.Unix()))
		}
		s.Log.Info("serving a new webhook certificate", "secret", s.Secret.String(), "serial", serial(*served), "ips", s.IPs)
	}
	s.Loaded()
	s.closeOnce.Do(func() { close(s.loaded) })
	if s.Dir == "" {
		return nil
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{corev1.TLSPrivateKeyKey, key}, {corev1.TLSCertKey, cert}} {
		if err := writeIfChanged(filepath.Join(s.Dir, f.name), f.data); err != nil {
			return err
		}
	}
	return nil
}

func writeIfChanged(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// serial is the leaf's serial number, for the log: the one a TLS handshake
// shows, and the one cert-manager's Certificate status names.
func serial(pair tls.Certificate) string {
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return ""
	}
	return leaf.SerialNumber.Text(16)
}

// firstDER returns the DER bytes of the first certificate in a PEM bundle.
func firstDER(pemData []byte) []byte {
	block, _ := pem.Decode(pemData)
	if block == nil {
		return nil
	}
	return block.Bytes
}

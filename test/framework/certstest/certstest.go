package certstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CA is a self-signed root, like the one config/certmanager's
// self-signed Issuer signs.
type CA struct {
	Cert *x509.Certificate
	PEM  []byte
	key  *ecdsa.PrivateKey
}

// NewCA makes a root CA valid for an hour.
func NewCA() (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "myoperator-ca"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, PEM: pemOf("CERTIFICATE", der), key: key}, nil
}

// Leaf is a serving certificate the CA signed, with its key.
type Leaf struct {
	Cert              *x509.Certificate
	CertPEM, KeyPEM   []byte
	DNSNames, IPAddrs []string
}

// Serial is the leaf's serial number as a TLS handshake shows it.
func (l *Leaf) Serial() string { return l.Cert.SerialNumber.Text(16) }

// Issue signs a serving certificate for the DNS names (and 127.0.0.1).
func (ca *CA) Issue(dnsNames ...string) (*Leaf, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		DNSNames: dnsNames, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &Leaf{Cert: cert, CertPEM: pemOf("CERTIFICATE", der), KeyPEM: pemOf("PRIVATE KEY", keyDER), DNSNames: dnsNames, IPAddrs: []string{"127.0.0.1"}}, nil
}

// Secret is the Secret cert-manager's Certificate controllers write for a
// Certificate named certificate, issued by the CA Issuer issuer: type
// kubernetes.io/tls with tls.crt, tls.key and ca.crt, and the
// cert-manager.io annotations.
func Secret(namespace, name, certificate, issuer string, ca *CA, leaf *Leaf) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: name,
			Labels: map[string]string{"controller.cert-manager.io/fao": "true"},
			Annotations: map[string]string{
				"cert-manager.io/certificate-name": certificate,
				"cert-manager.io/issuer-name":      issuer,
				"cert-manager.io/issuer-kind":      "Issuer",
				"cert-manager.io/issuer-group":     "",
				"cert-manager.io/common-name":      "",
				"cert-manager.io/alt-names":        strings.Join(leaf.DNSNames, ","),
				"cert-manager.io/ip-sans":          strings.Join(leaf.IPAddrs, ","),
				"cert-manager.io/uri-sans":         "",
			},
		},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: leaf.CertPEM, corev1.TLSPrivateKeyKey: leaf.KeyPEM, "ca.crt": ca.PEM},
	}
}

// RotatorSecret is the Secret the manager's own rotator (cert-controller)
// keeps: type Opaque with the CA's key beside its certificate.
func RotatorSecret(namespace, name string, ca *CA, leaf *Leaf) (*corev1.Secret, error) {
	key, err := x509.MarshalPKCS8PrivateKey(ca.key)
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Data: map[string][]byte{
			corev1.TLSCertKey: leaf.CertPEM, corev1.TLSPrivateKeyKey: leaf.KeyPEM,
			"ca.crt": ca.PEM, "ca.key": pemOf("PRIVATE KEY", key),
		},
	}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

func pemOf(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// ServingDir writes a serving certificate for localhost and 127.0.0.1 as
// tls.crt and tls.key into a new folder under parent, the way OLM mounts
// one, and returns the folder: a manager started with
// --manage-webhook-certs=false --webhook-cert-secret="" serves it.
func ServingDir(parent string) (string, error) {
	ca, err := NewCA()
	if err != nil {
		return "", err
	}
	leaf, err := ca.Issue("localhost")
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(parent, "serving-certs-")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), leaf.CertPEM, 0o600); err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, "tls.key"), leaf.KeyPEM, 0o600)
}

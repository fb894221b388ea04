package certs

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/big"
	"net"
)

// caCertKey and caKeyKey hold the rotator's CA in its Secret (cert-controller
// writes them beside tls.crt and tls.key; cert-manager writes no CA key).
const (
	caCertKey = "ca.crt"
	caKeyKey  = "ca.key"
)

// withIPs returns the pair with its leaf signed again by the CA, valid for
// ips as well: the same key, names and lifetime, with IP SANs added.
//
// It exists for a manager run on a developer's host (make run) whose API
// server calls it at an IP address, as kind's does (the host's address on
// the kind network): Go's TLS client, kube-apiserver's, matches an IP host
// against the certificate's IP SANs only, and cert-controller puts every
// extra name into DNS SANs. The rotator keeps owning the CA, the Secret and
// the CA bundles it injects; this leaf lives only in memory.
func withIPs(pair tls.Certificate, caPEM, caKeyPEM []byte, ips []net.IP) (*tls.Certificate, error) {
	if len(caPEM) == 0 || len(caKeyPEM) == 0 {
		return nil, errors.New("the Secret holds no CA key (" + caKeyKey + "), which signing a certificate for IP addresses needs: only the manager's own rotator keeps one")
	}
	ca, err := tls.X509KeyPair(caPEM, caKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("the Secret's CA: %w", err)
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("the Secret's CA: %w", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("the Secret's serving certificate: %w", err)
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               leaf.Subject,
		DNSNames:              leaf.DNSNames,
		IPAddresses:           append(append([]net.IP{}, leaf.IPAddresses...), ips...),
		NotBefore:             leaf.NotBefore,
		NotAfter:              leaf.NotAfter,
		KeyUsage:              leaf.KeyUsage,
		ExtKeyUsage:           leaf.ExtKeyUsage,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, leaf.PublicKey, ca.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("signing the serving certificate for %v: %w", ips, err)
	}
	out := pair
	out.Certificate = append([][]byte{der}, pair.Certificate[1:]...)
	out.Leaf = nil
	return &out, nil
}

package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	"github.com/example/myoperator/internal/scheme"
	"github.com/example/myoperator/test/framework/manifests"
	"github.com/example/myoperator/test/framework/testutil"
)

// KubeVersion is the Kubernetes version the project builds and tests against
// by default. make test-k8s-oldest runs the same suites on the oldest
// supported version by pointing KUBEBUILDER_ASSETS at its folder, which
// BinaryDir prefers.
const KubeVersion = "v1.37.2"

// BinaryDir returns the folder holding the project-built etcd and
// kube-apiserver: $KUBEBUILDER_ASSETS, or bin/k8s/<version> in the repo.
func BinaryDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		root, err := testutil.FindRepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin", "k8s", KubeVersion)
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("testenv: %s missing in %s; run `make k8s-binaries` first", b, dir)
		}
	}
	return dir, nil
}

// Options chooses what Start installs.
type Options struct {
	// Webhooks installs config/webhook's configurations, pointed at a local
	// webhook server that the caller starts on WebhookInstallOptions' host,
	// port and certificate directory, and the CRD conversion webhooks.
	Webhooks bool
	// WebhookHost is the host name in the webhook URLs the API server calls;
	// 127.0.0.1 when empty. A serving certificate must be valid for it.
	WebhookHost string
	// AuditLog, when set, is the file the API server writes its audit log
	// to, one JSON event per line, at the Metadata level for every request
	// (what an admin reads to find who uses a deprecated version).
	AuditLog string
	// FeatureGates, when set, is the API server's --feature-gates (for
	// example "ShardedListAndWatch=true" for an alpha feature).
	FeatureGates string
}

// auditPolicy logs every request's metadata (user, user agent, verb,
// resource, annotations such as k8s.io/deprecated), never bodies.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

// New returns an envtest environment on the project-built binaries with the
// project's CRDs (as kustomize renders config/crd) to install on Start.
func New(opts Options) (*envtest.Environment, error) {
	binDir, err := BinaryDir()
	if err != nil {
		return nil, err
	}
	docs, err := manifests.Kustomize("config/crd")
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: binDir,
		Scheme:                scheme.New(),
		ErrorIfCRDPathMissing: true,
	}
	for _, doc := range docs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			return nil, fmt.Errorf("config/crd: %w", err)
		}
		if !opts.Webhooks {
			// Without a webhook server, the API server cannot convert; the
			// caller only looks at schema validation then.
			crd.Spec.Conversion = nil
		}
		env.CRDInstallOptions.CRDs = append(env.CRDInstallOptions.CRDs, crd)
	}
	if opts.AuditLog != "" {
		policy := filepath.Join(filepath.Dir(opts.AuditLog), "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
			return nil, err
		}
		args := env.ControlPlane.GetAPIServer().Configure()
		args.Set("audit-policy-file", policy)
		args.Set("audit-log-path", opts.AuditLog)
	}
	if opts.FeatureGates != "" {
		env.ControlPlane.GetAPIServer().Configure().Set("feature-gates", opts.FeatureGates)
	}
	if opts.Webhooks {
		// The Drink converter is registered with the webhook builder rather
		// than through methods on the API types, so envtest cannot detect
		// it from the scheme; point every CRD that asks for conversion at
		// the local server.
		env.WebhookInstallOptions.IgnoreSchemeConvertible = true
		env.WebhookInstallOptions.LocalServingHost = "127.0.0.1"
		if opts.WebhookHost != "" {
			// The server binds to 127.0.0.1; the URLs name WebhookHost.
			env.WebhookInstallOptions.LocalServingHostExternalName = opts.WebhookHost
		}
		if err := addWebhookConfigurations(&env.WebhookInstallOptions); err != nil {
			return nil, err
		}
	}
	return env, nil
}

// addWebhookConfigurations loads config/webhook, when it exists, into the
// install options; envtest rewrites each clientConfig to the local server.
func addWebhookConfigurations(o *envtest.WebhookInstallOptions) error {
	root, err := testutil.FindRepoRoot()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "config", "webhook", "kustomization.yaml")); err != nil {
		return nil //nolint:nilerr // no admission webhooks yet: conversion only.
	}
	docs, err := manifests.Kustomize("config/webhook")
	if err != nil {
		return err
	}
	for _, doc := range docs {
		var head struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return err
		}
		switch head.Kind {
		case "MutatingWebhookConfiguration":
			c := &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := yaml.UnmarshalStrict(doc, c); err != nil {
				return fmt.Errorf("config/webhook: %w", err)
			}
			o.MutatingWebhooks = append(o.MutatingWebhooks, c)
		case "ValidatingWebhookConfiguration":
			c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := yaml.UnmarshalStrict(doc, c); err != nil {
				return fmt.Errorf("config/webhook: %w", err)
			}
			o.ValidatingWebhooks = append(o.ValidatingWebhooks, c)
		}
	}
	return nil
}

// WaitForWebhookServer waits until the manager's webhook server answers TLS
// connections.
func WaitForWebhookServer(ctx context.Context, mgr manager.Manager, timeout time.Duration) error {
	check := mgr.GetWebhookServer().StartedChecker()
	deadline := time.Now().Add(timeout)
	for {
		err := check(nil)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("webhook server not serving after %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/test/framework/testenv"
)

// operatorCRDs are the CRDs config/default installs.
var operatorCRDs = []string{"drinks.example.com", "guestbooks.webapp.my.domain", "operatorconfigs.operator.example.com"}

// installAndBootstrap: what the install (`kubectl apply -k`, `make deploy`
// or the user's) and the pods' start left in the cluster: CRDs established;
// the namespace enforces Pod Security restricted and still admitted the
// Deployment's pods; the initContainer created OperatorConfig cluster with
// the defaults (skipped for an existing cluster's OperatorConfig that its
// users have edited since); it is Available and kstatus Current; with the
// production wiring, the webhooks go through the Service with the injected
// CA and reach only Ready pods (wiring_test.go).
func installAndBootstrap() features.Feature {
	return features.New("install and bootstrap").WithLabel("area", "install").
		Assess("CRDs established", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			args := []string{"wait", "--for=condition=Established", "--timeout=30s"}
			for _, crd := range operatorCRDs {
				args = append(args, "crd/"+crd)
			}
			if out, err := kubectl(cfg, args...); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			return ctx
		}).
		Assess("namespace enforces restricted, the Deployment's pods admitted", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ns := &corev1.Namespace{}
			if err := kc.Get(ctx, client.ObjectKey{Name: operatorNS}, ns); err != nil {
				t.Fatal(err)
			}
			if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
				t.Errorf("namespace %s enforces %q, want restricted", operatorNS, got)
			}
			// Enforcement is live: a pod without the restricted settings is
			// refused in the same namespace.
			out, err := kubectl(cfg, "run", "unhardened", "-n", operatorNS, "--image=registry.k8s.io/pause:3.10", "--dry-run=server")
			if err == nil || !strings.Contains(out, `violates PodSecurity "restricted`) {
				t.Errorf("an unhardened pod was not refused by Pod Security: %v: %s", err, out)
			}
			testenv.Eventually(t, 60*time.Second, func() string {
				d := &appsv1.Deployment{}
				if err := kc.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: operatorDeployment}, d); err != nil {
					return err.Error()
				}
				if d.Status.AvailableReplicas != 2 {
					return fmt.Sprintf("Deployment has %d available replicas, want 2", d.Status.AvailableReplicas)
				}
				return ""
			})
			if pods, err := operatorPodList(ctx); err != nil || len(pods) != 2 {
				t.Errorf("%d operator pods run (%v), want 2", len(pods), err)
			}
			return ctx
		}).
		Assess("the initContainer created OperatorConfig cluster with defaults", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			oc := &operatorv1alpha1.OperatorConfig{}
			if err := kc.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, oc); err != nil {
				t.Fatal(err)
			}
			// The spec (the main resource, not the status subresource the
			// manager writes) was written by the bootstrap binary alone. The
			// order of managedFields entries is not creation order (the API
			// server sorts them by time in whole seconds, then by name), so
			// only who owns what is checked.
			var specManagers []string
			for _, mf := range oc.ManagedFields {
				if mf.Subresource == "" {
					specManagers = append(specManagers, mf.Manager)
				}
			}
			if len(specManagers) != 1 || specManagers[0] != "myoperator-bootstrap" {
				if ocBeforeSuite {
					// An existing cluster's OperatorConfig belongs to its users
					// once created: the bootstrap never overwrites it.
					skip(t, fmt.Sprintf("OperatorConfig %s was there before the suite and has been written since by %v: its spec is its owners', not the bootstrap's defaults", oc.Name, specManagers))
				}
				t.Errorf("managers of the main resource %v, want only the bootstrap binary (myoperator-bootstrap)", specManagers)
			}
			// The Guestbook image is the CRD's default, which a release's
			// files name by digest in the registry they were pushed to.
			image, err := kubectl(cfg, "get", "crd", "operatorconfigs.operator.example.com", "-o",
				"jsonpath={.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.guestbook.properties.image.default}")
			if err != nil || image == "" {
				t.Fatalf("the OperatorConfig CRD's guestbook.image default: %v: %q", err, image)
			}
			if mode.install != installKustomize && !strings.HasPrefix(image, release.registry+"/") {
				t.Errorf("the CRD's guestbook.image default %q is not in the registry the release was pushed to (%s)", image, release.registry)
			}
			s := oc.Spec
			if s.ManagementState != operatorv1alpha1.DefaultManagementState || s.LogLevel != operatorv1alpha1.DefaultLogLevel ||
				s.Drinks.DefaultSize != operatorv1alpha1.DefaultDrinkSize || s.Guestbook.Namespace != operatorv1alpha1.DefaultGuestbookNamespace ||
				s.Guestbook.Image != image {
				t.Errorf("spec %+v is not the defaults (Guestbook image %s)", s, image)
			}
			return ctx
		}).
		Assess("OperatorConfig Available", conditionTrueWithin("operatorconfig", "", operatorv1alpha1.SingletonName, operatorv1alpha1.ConditionAvailable, 60*time.Second)).
		Assess("OperatorConfig and Deployment kstatus Current", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			kstatusCurrentWithin(ctx, t, operatorv1alpha1.GroupVersion.WithKind("OperatorConfig"), "", operatorv1alpha1.SingletonName, 60*time.Second)
			kstatusCurrentWithin(ctx, t, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, operatorNS, operatorDeployment, 60*time.Second)
			return ctx
		}).
		Assess("every webhook and the Drink conversion name the webhook Service, with the injected CA", assessWebhookWiring).
		Assess("the API server's webhook calls reach only Ready pods (per-pod counters, a replica held not Ready)", assessReadyEndpointsOnly).
		Assess("the operator's image pulled from the loopback registry by digest (E2E_INSTALL=manifest, helm)", assessPulledFromRegistry).
		Assess("the samples (config/samples) Ready: three Drinks and the Guestbook", assessSamplesReady).
		Feature()
}

// kstatusCurrentWithin waits until kstatus computes Current for the object.
func kstatusCurrentWithin(ctx context.Context, t *testing.T, gvk schema.GroupVersionKind, ns, name string, timeout time.Duration) {
	t.Helper()
	testenv.Eventually(t, timeout, func() string {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
			return err.Error()
		}
		return kstatusNotCurrent(u)
	})
}

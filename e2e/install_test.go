//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/yaml"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/test/framework/testenv"
)

// operatorCRDs are the CRDs config/default installs.
var operatorCRDs = []string{"drinks.example.com", "guestbooks.webapp.my.domain", "operatorconfigs.operator.example.com"}

// installAndBootstrap: what the install (`kubectl apply -k`, `make deploy`
// or the user's) and the pods' start left in the cluster: CRDs established;
// the namespace enforces Pod Security restricted and still admitted the
// Deployment's pods; the initContainer created OperatorConfig cluster with
// an empty spec, and its status says every value in effect is a default
// (skipped for an existing cluster's OperatorConfig that its users have
// edited since); it is Ready, Available and kstatus Current; with the
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
		Assess("the initContainer created OperatorConfig cluster with an empty spec; status.effective says every value's source", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// What a user sees: kubectl wait and kubectl get -o yaml.
			if out, err := kubectl(cfg, "wait", "--for=condition=Ready", "--timeout=60s", "operatorconfig/"+operatorv1alpha1.SingletonName); err != nil {
				t.Fatalf("kubectl wait --for=condition=Ready: %v: %s", err, out)
			}
			out, err := kubectl(cfg, "get", "operatorconfig", operatorv1alpha1.SingletonName, "-o", "yaml")
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			oc := &operatorv1alpha1.OperatorConfig{}
			if err := yaml.Unmarshal([]byte(out), oc); err != nil {
				t.Fatal(err)
			}
			// No one but the bootstrap binary wrote the spec (the main
			// resource, not the status subresource the manager writes). An
			// empty spec owns no field, so the API server may keep no entry
			// for the bootstrap's create at all. The order of managedFields
			// entries is not creation order (sorted by time in whole
			// seconds, then by name), so only who owns what is checked.
			var specManagers []string
			for _, mf := range oc.ManagedFields {
				if mf.Subresource == "" {
					specManagers = append(specManagers, mf.Manager)
				}
			}
			if slices.ContainsFunc(specManagers, func(m string) bool { return m != "myoperator-bootstrap" }) {
				if ocBeforeSuite {
					// An existing cluster's OperatorConfig belongs to its users
					// once created: the bootstrap never overwrites it.
					skip(t, fmt.Sprintf("OperatorConfig %s was there before the suite and has been written since by %v: its spec is its owners', not the bootstrap's", oc.Name, specManagers))
				}
				t.Errorf("managers of the main resource %v, want none but the bootstrap binary (myoperator-bootstrap)", specManagers)
			}
			if (oc.Spec != operatorv1alpha1.OperatorConfigSpec{}) {
				t.Errorf("spec %+v, want it empty: it holds only what users chose", oc.Spec)
			}
			// The Guestbook image in effect is the manager's GUESTBOOK_IMAGE,
			// which a release's files name by digest in the registry they
			// were pushed to.
			image := managerGuestbookImage(ctx, t)
			if mode.install != installKustomize && !strings.HasPrefix(image, release.registry+"/") {
				t.Errorf("the manager's GUESTBOOK_IMAGE %q is not in the registry the release was pushed to (%s)", image, release.registry)
			}
			d := operatorv1alpha1.EffectiveSources{ManagementState: "default", LogLevel: "default", DrinkDefaultSize: "default", GuestbookNamespace: "default", GuestbookImage: "default"}
			want := &operatorv1alpha1.EffectiveConfig{
				ManagementState: operatorv1alpha1.DefaultManagementState, LogLevel: operatorv1alpha1.DefaultLogLevel,
				DrinkDefaultSize: operatorv1alpha1.DefaultDrinkSize, GuestbookNamespace: operatorv1alpha1.DefaultGuestbookNamespace,
				GuestbookImage: image, Sources: d,
			}
			if diff := cmp.Diff(want, oc.Status.Effective); diff != "" {
				t.Errorf("status.effective (-want +got):\n%s", diff)
			}
			// kubectl get says the state in effect, Ready, and that no value
			// is customized (an empty cell).
			table, err := kubectl(cfg, "get", "opc")
			if err != nil {
				t.Fatalf("%v: %s", err, table)
			}
			if lines := strings.Split(strings.TrimSpace(table), "\n"); len(lines) != 2 || !slices.Equal(strings.Fields(lines[0]), []string{"NAME", "STATE", "READY", "CUSTOMIZED", "AGE"}) ||
				!slices.Equal(strings.Fields(lines[1])[:3], []string{"cluster", "Managed", "True"}) || len(strings.Fields(lines[1])) != 4 {
				t.Errorf("kubectl get opc:\n%s", table)
			}
			return ctx
		}).
		Assess("OperatorConfig Available", conditionTrueWithin("operatorconfig", "", operatorv1alpha1.SingletonName, operatorv1alpha1.ConditionAvailable, 60*time.Second)).
		Assess("docs/install.md's readiness commands, run as written, all pass", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			out := runDocBlock(t, cfg, "docs/install.md::install-ready", "")
			// kubectl get opc: STATE Managed, READY True, CUSTOMIZED empty,
			// then the AGE.
			if !regexp.MustCompile(`(?m)^cluster +Managed +True +[0-9]+[smhd]`).MatchString(out) {
				t.Errorf("kubectl get opc does not show what docs/install.md says (STATE Managed, READY True, CUSTOMIZED empty):\n%s", out)
			}
			return ctx
		}).
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

// managerGuestbookImage is the GUESTBOOK_IMAGE of the installed manager
// container: the Guestbook pods' image where the OperatorConfig names none.
func managerGuestbookImage(ctx context.Context, t *testing.T) string {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := kc.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: operatorDeployment}, d); err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if c.Name == "manager" && e.Name == "GUESTBOOK_IMAGE" {
				return e.Value
			}
		}
	}
	t.Fatalf("the manager container of %s/%s sets no GUESTBOOK_IMAGE", operatorNS, operatorDeployment)
	return ""
}

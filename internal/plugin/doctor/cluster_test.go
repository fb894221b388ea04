package doctor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
	drinksv1beta1 "github.com/example/myoperator/apis/drinks/v1beta1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/app"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/internal/opconfig"
	"github.com/example/myoperator/internal/pause"
	"github.com/example/myoperator/internal/plugin"
	"github.com/example/myoperator/internal/plugin/doctor"
	"github.com/example/myoperator/internal/plugin/status"
	"github.com/example/myoperator/test/framework/manifests"
	"github.com/example/myoperator/test/framework/testenv"
)

const (
	operatorNS = names.Namespace
	podName    = "myoperator-controller-manager-7d9f-abcde"
)

// TestDoctorOnAPIServer runs the manager (webhooks, reconcilers, leader
// election as pod podName) on the project-built API server with an
// installation around it as config/default makes one (the Deployment with
// its arguments, the running pod, the certificate Secret), a Drink
// authored in each version, the course's Drink, a paused Drink and one
// outside --watch-namespaces. The report must be clean. Then, with the
// manager stopped so that it repairs nothing, each invariant is broken
// once: its finding must appear, and go once the break is undone.
func TestDoctorOnAPIServer(t *testing.T) {
	env, cfg, k8s := testenv.Start(t, testenv.Options{Webhooks: true})
	ctx := t.Context()
	for _, ns := range []string{operatorNS, operatorv1alpha1.DefaultGuestbookNamespace, "cafe", "elsewhere", "closing"} {
		mustCreate(t, k8s, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	installation(t, k8s, env.WebhookInstallOptions.LocalServingCAData, env.WebhookInstallOptions.LocalServingCertDir)
	mustCreate(t, k8s, &operatorv1alpha1.OperatorConfig{ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName},
		Spec: operatorv1alpha1.OperatorConfigSpec{LogLevel: operatorv1alpha1.LogDebug}})

	mgrCtx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	if err := startManager(mgrCtx, env, cfg, stopped); err != nil {
		t.Fatal(err)
	}
	defer func() { stop(); <-stopped }()

	mustCreate(t, k8s, &drinksv1alpha1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "cafe", Name: "alpha"}, Spec: drinksv1alpha1.DrinkSpec{Name: "A", Drink: "tea"}})
	mustCreate(t, k8s, &drinksv1beta1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "cafe", Name: "beta"}, Spec: drinksv1beta1.DrinkSpec{Name: "B", Drink: "tea", Size: "Small", Sugar: 1}})
	mustCreate(t, k8s, &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "cafe", Name: "one"}, Spec: drinksv1.DrinkSpec{DisplayName: "C", Beverage: "tea", Extras: []string{"milk"}}})
	course := &drinksv1.Drink{}
	if err := yaml.UnmarshalStrict([]byte(testenv.CourseDrink(t)), course); err != nil {
		t.Fatal(err)
	}
	course.Namespace = "cafe"
	mustCreate(t, k8s, course)
	// Paused below, once rendered.
	mustCreate(t, k8s, &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "cafe", Name: "paused"},
		Spec: drinksv1.DrinkSpec{DisplayName: "P", Beverage: "tea"}})
	mustCreate(t, k8s, &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "out"}, Spec: drinksv1.DrinkSpec{DisplayName: "O", Beverage: "tea"}})
	// Its namespace is deleted below.
	mustCreate(t, k8s, &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "closing", Name: "last"}, Spec: drinksv1.DrinkSpec{DisplayName: "L", Beverage: "tea"}})

	// Healthy: the operator has converged.
	testenv.Eventually(t, 30*time.Second, func() string { return report(ctx, t, k8s) })
	helmTestReads(t, cfg, k8s)
	r, err := status.Read(ctx, k8s, operatorNS, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	status.Text(&out, r)
	var lines []string
	for l := range strings.Lines(out.String()) {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	summary := strings.Join(lines, "\n")
	// -o json and -o yaml print the same report, whole.
	for _, format := range plugin.OutputFormats {
		var b bytes.Buffer
		if err := plugin.Encode(&b, format, r); err != nil {
			t.Fatal(err)
		}
		back := &status.Report{}
		if err := yaml.Unmarshal(b.Bytes(), back); err != nil {
			t.Fatalf("-o %s: %v:\n%s", format, err, b.String())
		}
		if diff := cmp.Diff(r, back); diff != "" {
			t.Errorf("-o %s does not read back as the report (-want +got):\n%s", format, diff)
		}
	}
	if r.Operator.Leader != podName || r.DrinksByAuthoredVersion["v1"] != 5 || r.Certificate.NotAfter == nil || r.Certificate.DaysLeft == nil || *r.Certificate.DaysLeft < 0 || r.OperatorConfig == nil ||
		!slices.Equal(r.OperatorConfig.Customized, []string{"logLevel"}) {
		t.Errorf("report: leader %q, v1 Drinks %d, certificate %+v, OperatorConfig %+v", r.Operator.Leader, r.DrinksByAuthoredVersion["v1"], r.Certificate, r.OperatorConfig)
	}
	for _, want := range []string{"leader: " + podName, "webhook mdrink.example.com", "crd/drinks.example.com conversion webhook", "expires",
		"cafe alpha v1alpha1 v1alpha1 True", "cafe example-drink v1 v1+course True", "by authored version: v1alpha1 1, v1beta1 1, v1 5",
		"state: Managed Ready: True customized: logLevel"} {
		if !strings.Contains(summary, want) {
			t.Errorf("status lacks %q:\n%s", want, summary)
		}
	}

	// A user pauses one Drink (the operator leaves it alone from then on).
	paused := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "cafe", Name: "paused"}}
	annotate := []byte(`{"metadata":{"annotations":{"` + pause.Annotation + `":"` + pause.On + `"}}}`)
	if err := k8s.Patch(ctx, paused, client.RawPatch(types.MergePatchType, annotate)); err != nil {
		t.Fatal(err)
	}

	// The manager stops and releases the Lease; the pod stays the holder,
	// as if it still ran, and the Drinks it is told to leave alone lose
	// their ConfigMaps.
	stop()
	<-stopped
	lease := &coordinationv1.Lease{}
	get(t, k8s, client.ObjectKey{Namespace: operatorNS, Name: names.LeaderElectionID}, lease)
	lease.Spec.HolderIdentity = ptr.To(podName + "_0000")
	mustUpdate(t, k8s, lease)
	for _, key := range []client.ObjectKey{{Namespace: "cafe", Name: "paused"}, {Namespace: "elsewhere", Name: "out"}} {
		if err := k8s.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}); err != nil {
			t.Fatal(err)
		}
	}
	if why := report(ctx, t, k8s); why != "" {
		t.Fatalf("paused and out-of-scope Drinks without ConfigMaps: %s", why)
	}
	// A namespace being deleted: the namespace controller (none runs here,
	// so it stays Terminating) removes the ConfigMaps and the Drinks kind
	// by kind, and a Drink may be left without its ConfigMap meanwhile.
	if err := k8s.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "closing", Name: "last"}}); err != nil {
		t.Fatal(err)
	}
	if why := report(ctx, t, k8s); !strings.Contains(why, "its ConfigMap closing/last is missing") {
		t.Fatalf("a Drink without its ConfigMap in a namespace not being deleted: %q, want the finding", why)
	}
	if err := k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "closing"}}); err != nil {
		t.Fatal(err)
	}
	if why := report(ctx, t, k8s); why != "" {
		t.Fatalf("a Drink without its ConfigMap in a namespace being deleted: %s", why)
	}

	for _, tc := range []struct {
		invariant, breaks string
		brk               func(t *testing.T) (undo func())
		finding           string
	}{
		{"drink-configmap", "the ConfigMap of a v1beta1 Drink rewritten in v1's layout", func(t *testing.T) func() {
			return edit(t, k8s, &corev1.ConfigMap{}, client.ObjectKey{Namespace: "cafe", Name: "beta"}, func(cm *corev1.ConfigMap) {
				cm.Annotations["example.com/layout"] = "v1"
			})
		}, `drink/cafe/beta ConfigMap cafe/beta is in layout "v1", want "v1beta1"`},
		{"drink-configmap", "the course Drink's ConfigMap deleted", func(t *testing.T) func() {
			return remove(t, k8s, &corev1.ConfigMap{}, client.ObjectKey{Namespace: "cafe", Name: course.Name})
		}, "its ConfigMap cafe/" + course.Name + " is missing"},
		{"drink-configmap", "a second ConfigMap controlled by a Drink", func(t *testing.T) func() {
			cm := &corev1.ConfigMap{}
			get(t, k8s, client.ObjectKey{Namespace: "cafe", Name: "one"}, cm)
			cm.ObjectMeta = metav1.ObjectMeta{Namespace: "cafe", Name: "one-copy", OwnerReferences: cm.OwnerReferences}
			mustCreate(t, k8s, cm)
			return func() { mustDelete(t, k8s, cm) }
		}, "ConfigMap cafe/one-copy is controlled by the Drink too"},
		{"orphaned-configmap", "a ConfigMap labelled for a Drink that does not exist", func(t *testing.T) func() {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "cafe", Name: "ghost",
				Labels: map[string]string{"app.kubernetes.io/managed-by": "myoperator", "example.com/drink": "ghost"}}}
			mustCreate(t, k8s, cm)
			return func() { mustDelete(t, k8s, cm) }
		}, "configmap/cafe/ghost is labelled example.com/drink=ghost but it has no controller"},
		{"leader", "the Lease held by a pod that is gone", func(t *testing.T) func() {
			return edit(t, k8s, &coordinationv1.Lease{}, client.ObjectKey{Namespace: operatorNS, Name: names.LeaderElectionID}, func(l *coordinationv1.Lease) {
				l.Spec.HolderIdentity = ptr.To("myoperator-controller-manager-old_1")
			})
		}, `is held by "myoperator-controller-manager-old_1", which names no pod`},
		{"webhook-ca", "the validating webhooks' caBundle from another CA", func(t *testing.T) func() {
			return edit(t, k8s, &admissionregistrationv1.ValidatingWebhookConfiguration{}, client.ObjectKey{Name: names.ValidatingWebhookConfig},
				func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
					c.Webhooks[0].ClientConfig.CABundle = []byte("not a certificate")
				})
		}, "validatingwebhookconfiguration/myoperator-validating-webhook-configuration webhook vdrink.example.com caBundle does not hold the current CA"},
		{"webhook-ca", "the mutating webhooks' caBundle emptied", func(t *testing.T) func() {
			return edit(t, k8s, &admissionregistrationv1.MutatingWebhookConfiguration{}, client.ObjectKey{Name: names.MutatingWebhookConfig},
				func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
					c.Webhooks[1].ClientConfig.CABundle = nil
				})
		}, "webhook mguestbook.webapp.my.domain caBundle does not hold the current CA"},
		{"webhook-ca", "the Drink CRD's conversion caBundle emptied", func(t *testing.T) func() {
			return edit(t, k8s, &apiextensionsv1.CustomResourceDefinition{}, client.ObjectKey{Name: names.DrinkCRD},
				func(c *apiextensionsv1.CustomResourceDefinition) {
					c.Spec.Conversion.Webhook.ClientConfig.CABundle = nil
				})
		}, "crd/drinks.example.com conversion webhook caBundle does not hold the current CA"},
		{"webhook-endpoints", "a webhook moved to the Service, whose only endpoint is not ready", func(t *testing.T) func() {
			undo := edit(t, k8s, &admissionregistrationv1.MutatingWebhookConfiguration{}, client.ObjectKey{Name: names.MutatingWebhookConfig},
				func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
					c.Webhooks[1].ClientConfig.URL = nil
					c.Webhooks[1].ClientConfig.Service = &admissionregistrationv1.ServiceReference{Namespace: operatorNS, Name: names.WebhookService, Path: ptr.To("/mutate")}
				})
			return undo
		}, "service/myoperator-system/myoperator-webhook-service has no ready endpoint; mutatingwebhookconfiguration/myoperator-mutating-webhook-configuration webhook mguestbook.webapp.my.domain call it"},
		{"stored-versions", "the Drink CRD's storedVersions holding v1beta1 too", func(t *testing.T) func() {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			get(t, k8s, client.ObjectKey{Name: names.DrinkCRD}, crd)
			crd.Status.StoredVersions = []string{"v1beta1", "v1"}
			if err := k8s.Status().Update(ctx, crd); err != nil {
				t.Fatal(err)
			}
			return func() {
				get(t, k8s, client.ObjectKey{Name: names.DrinkCRD}, crd)
				crd.Status.StoredVersions = []string{"v1"}
				if err := k8s.Status().Update(ctx, crd); err != nil {
					t.Fatal(err)
				}
			}
		}, "crd/drinks.example.com status.storedVersions is [v1beta1 v1], want [v1]"},
		{"admission-policies", "the ConfigMaps' policy's binding deleted", func(t *testing.T) func() {
			return remove(t, k8s, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, client.ObjectKey{Name: names.ConfigMapsPolicy})
		}, "validatingadmissionpolicy/" + names.ConfigMapsPolicy + " not bound"},
		{"accepted-config", "the record of the accepted configuration edited", func(t *testing.T) func() {
			return edit(t, k8s, &corev1.ConfigMap{}, client.ObjectKey{Namespace: operatorNS, Name: opconfig.RecordName}, func(cm *corev1.ConfigMap) {
				for k, v := range cm.Data {
					cm.Data[k] = strings.ReplaceAll(v, `"logLevel":"Debug"`, `"logLevel":"Error"`)
				}
			})
		}, "configmap/myoperator-system/myoperator-accepted-config records {managementState: Managed, logLevel: Error"},
	} {
		t.Run(tc.invariant+": "+tc.breaks, func(t *testing.T) {
			undo := tc.brk(t)
			got := report(ctx, t, k8s)
			undo()
			if !strings.Contains(got, "FINDING   "+tc.invariant+": ") || !strings.Contains(got, tc.finding) {
				t.Errorf("report:\n%s\nwant the %s finding %q", got, tc.invariant, tc.finding)
			}
			if why := report(ctx, t, k8s); why != "" {
				t.Fatalf("after undoing: %s", why)
			}
		})
	}
}

// report is doctor's report, "" when it finds nothing.
func report(ctx context.Context, t *testing.T, c client.Client) string {
	t.Helper()
	s, err := doctor.Read(ctx, c, operatorNS, "")
	if err != nil {
		t.Fatal(err)
	}
	findings := doctor.Run(s)
	if len(findings) == 0 {
		return ""
	}
	var b bytes.Buffer
	doctor.Print(&b, s, findings)
	// -o json holds the same findings.
	r := doctor.NewReport(s, findings)
	var j bytes.Buffer
	if err := plugin.Encode(&j, "json", r); err != nil {
		t.Fatal(err)
	}
	back := &doctor.Report{}
	if err := json.Unmarshal(j.Bytes(), back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, back); diff != "" || len(back.Findings) != len(findings) {
		t.Errorf("-o json does not read back as the report (-want +got):\n%s", diff)
	}
	return b.String()
}

// installation creates what config/default installs around the manager
// that envtest does not: the Deployment with its arguments, its running
// pod and the certificate Secret holding envtest's CA, which signed the
// serving certificate.
func installation(t *testing.T, c client.Client, ca []byte, certDir string) {
	t.Helper()
	labels := map[string]string{"app.kubernetes.io/name": "myoperator", "control-plane": "controller-manager"}
	container := corev1.Container{Name: plugin.ManagerContainer, Image: "ghcr.io/example/myoperator:test",
		Args: []string{"--leader-elect", "--webhook-port=9443", "--watch-namespaces=cafe,closing," + operatorNS}}
	mustCreate(t, c, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: names.Deployment},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{container}}}}})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: podName, Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{container}}}
	mustCreate(t, c, pod)
	pod.Status.Phase = corev1.PodRunning
	if err := c.Status().Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	crt, err := os.ReadFile(filepath.Join(certDir, "tls.crt"))
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: names.CertSecret},
		Data: map[string][]byte{"ca.crt": ca, "tls.crt": crt}})
	// config/admission-policy's policies. The manager here runs as the
	// admin, whose writes of the record that policy refuses: its binding
	// matches no namespace in this test (doctor looks at the binding's
	// policy and actions only).
	policies, err := manifests.Render("config/admission-policy")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range policies {
		if o.GetKind() == "ValidatingAdmissionPolicyBinding" && o.GetName() == names.RecordPolicy {
			nothing := map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"doctor-test": "matches-nothing"}}}
			if err := unstructured.SetNestedMap(o.Object, nothing, "spec", "matchResources"); err != nil {
				t.Fatal(err)
			}
		}
		mustCreate(t, c, o)
	}
	// The webhook Service, with one endpoint that is not ready: no
	// webhook calls it (envtest's call URLs) until a case moves one there.
	mustCreate(t, c, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: names.WebhookService},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(9443)}}}})
	mustCreate(t, c, &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: names.WebhookService + "-1",
		Labels: map[string]string{discoveryv1.LabelServiceName: names.WebhookService}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.10"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}}}})
}

// startManager runs the manager as testenv.StartManager does, with leader
// election as podName; stopped closes when it has stopped, so that the
// test knows it repairs nothing any more.
func startManager(ctx context.Context, env *envtest.Environment, cfg *rest.Config, stopped chan struct{}) error {
	wo := env.WebhookInstallOptions
	mgr, err := app.New(cfg, app.Options{Namespace: operatorNS, LeaderElection: true, PodName: podName,
		WebhookHost: wo.LocalServingHost, WebhookPort: wo.LocalServingPort, CertDir: wo.LocalServingCertDir, MetricsAddr: "0", ProbeAddr: "0"})
	if err != nil {
		close(stopped)
		return err
	}
	go func() {
		defer close(stopped)
		_ = mgr.Start(ctx)
	}()
	return testenv.WaitForWebhookServer(ctx, mgr, 30*time.Second)
}

func mustCreate(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(t.Context(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func mustUpdate(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Update(t.Context(), obj); err != nil {
		t.Fatalf("updating %T %s: %v", obj, obj.GetName(), err)
	}
}

func mustDelete(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Delete(t.Context(), obj); err != nil {
		t.Fatalf("deleting %T %s: %v", obj, obj.GetName(), err)
	}
}

func get(t *testing.T, c client.Client, key client.ObjectKey, obj client.Object) {
	t.Helper()
	if err := c.Get(t.Context(), key, obj); err != nil {
		t.Fatalf("reading %T %s: %v", obj, key, err)
	}
}

// edit changes the object at key with change and returns what undoes it:
// an update back to the object as read.
func edit[T client.Object](t *testing.T, c client.Client, obj T, key client.ObjectKey, change func(T)) func() {
	t.Helper()
	get(t, c, key, obj)
	was := obj.DeepCopyObject().(T)
	change(obj)
	mustUpdate(t, c, obj)
	return func() {
		was.SetResourceVersion(obj.GetResourceVersion())
		mustUpdate(t, c, was)
	}
}

// remove deletes the object at key and returns what creates it again.
func remove[T client.Object](t *testing.T, c client.Client, obj T, key client.ObjectKey) func() {
	t.Helper()
	get(t, c, key, obj)
	mustDelete(t, c, obj)
	return func() {
		obj.SetResourceVersion("")
		mustCreate(t, c, obj)
	}
}

// helmTestReads: the Helm chart's test (config/helm-test) runs doctor on
// the installation, with the operator's namespace as the Drinks'
// namespace, as a ServiceAccount that only reads. Its rights, and no
// more, must give the report an administrator gets: the API server
// refuses any read doctor makes that they leave out.
func helmTestReads(t *testing.T, cfg *rest.Config, admin client.Client) {
	t.Helper()
	ctx := t.Context()
	objs, err := manifests.Render("config/helm-test")
	if err != nil {
		t.Fatal(err)
	}
	sa := ""
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount":
			sa = "system:serviceaccount:" + o.GetNamespace() + ":" + o.GetName()
		case "Pod":
			continue // the API server's job is what it reads, not running it
		}
		mustCreate(t, admin, o)
	}
	asTest := rest.CopyConfig(cfg)
	asTest.Impersonate = rest.ImpersonationConfig{UserName: sa}
	c, err := client.New(asTest, client.Options{Scheme: admin.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	var got, want []doctor.Finding
	// RBAC takes effect within a moment of the bindings' creation.
	testenv.Eventually(t, 10*time.Second, func() string {
		s, err := doctor.Read(ctx, c, operatorNS, operatorNS)
		if err != nil {
			return "doctor as " + sa + ": " + err.Error()
		}
		got = doctor.Run(s)
		return ""
	})
	s, err := doctor.Read(ctx, admin, operatorNS, operatorNS)
	if err != nil {
		t.Fatal(err)
	}
	want = doctor.Run(s)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("doctor as %s differs from an administrator's (-admin +test):\n%s", sa, diff)
	}
	// Nothing but reads: a write the role left out is refused.
	if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: "helm-test-write"}}); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("a ConfigMap created as %s: %v, want forbidden", sa, err)
	}
}

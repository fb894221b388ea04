package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/internal/scheme"
	"github.com/example/myoperator/test/framework/manifests"
	"github.com/example/myoperator/test/framework/testenv"
)

// TestOperatorWritesFenced: with config/rbac and config/admission-policy
// installed, each write is made with the operator's ServiceAccount's own
// token (what whoever takes an operator pod holds). RBAC allows every one
// of them; the policies refuse the ConfigMaps that are not the operator's
// (a create not shaped as a Drink's or a Guestbook's ConfigMap, a
// Guestbook's outside a namespace labelled as an operand namespace, a
// change to one no Drink or Guestbook owns) and any change to its webhook
// configurations or the Drink CRD but the CA bundle. With config/certmanager-default's policies, the CA bundle too.
func TestOperatorWritesFenced(t *testing.T) {
	_, cfg, admin := testenv.Start(t, testenv.Options{Webhooks: true})
	ctx := context.Background()
	for _, ns := range []string{operatorNS, "guestbook", "team-b", "kube-system"} {
		if ns == "kube-system" {
			continue // the API server made it
		}
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if ns == "guestbook" {
			// The install's operand namespace (config/operand-namespace).
			n.Labels = map[string]string{webappv1.OperandNamespaceLabel: "true"}
		}
		if err := admin.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	installRBAC(ctx, t, admin)
	policies := installPolicies(ctx, t, admin, "config/admission-policy")
	operator := operatorClient(ctx, t, cfg)

	drinkOwner := []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Drink", Name: "tea", UID: "d1", Controller: ptr.To(true)}}
	guestbookOwner := []metav1.OwnerReference{{APIVersion: "webapp.my.domain/v1", Kind: "Guestbook", Name: "gb", UID: "g1", Controller: ptr.To(true)}}
	// The labels the operator's creates carry (reconcile/drink_phases.go,
	// guestbook_phases.go).
	drinkLabels := map[string]string{names.ManagedByLabel: names.ManagedByValue, names.DrinkLabel: "tea"}
	guestbookLabels := map[string]string{names.ManagedByLabel: names.ManagedByValue, webappv1.NameLabel: webappv1.AppName, webappv1.InstanceLabel: "gb"}
	configMap := func(ns, name string, labels map[string]string, owners ...metav1.OwnerReference) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, OwnerReferences: owners}}
	}
	const shapedAsNeither = "the operator creates only ConfigMaps shaped as its own"
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "aws-auth"}, Data: map[string]string{"mapRoles": "[]"}}
	if err := admin.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	webhookName := "myoperator-validating-webhook-configuration"
	tests := []struct {
		name string
		do   func(c client.Client) error
		// want is part of the refusal; "" wants the write admitted.
		want string
	}{
		{"create a Drink's ConfigMap in a tenant namespace", func(c client.Client) error {
			return c.Create(ctx, configMap("team-b", "tea", drinkLabels, drinkOwner...))
		}, ""},
		{"create a Guestbook's ConfigMap in the operand namespace", func(c client.Client) error {
			return c.Create(ctx, configMap("guestbook", "gb-config", guestbookLabels, guestbookOwner...))
		}, ""},
		{"plant kube-system's coredns-custom naming a Guestbook its owner", func(c client.Client) error {
			return c.Create(ctx, configMap("kube-system", "coredns-custom", guestbookLabels, guestbookOwner...))
		}, "namespace kube-system is not labelled webapp.my.domain/operands=true"},
		{"create a Guestbook's ConfigMap in a tenant namespace", func(c client.Client) error {
			return c.Create(ctx, configMap("team-b", "gb-config", guestbookLabels, guestbookOwner...))
		}, "namespace team-b is not labelled webapp.my.domain/operands=true"},
		{"create kube-system's aws-auth naming a Drink of another name its owner", func(c client.Client) error {
			return c.Create(ctx, configMap("kube-system", "aws-auth-2", map[string]string{names.ManagedByLabel: names.ManagedByValue, names.DrinkLabel: "aws-auth-2"}, drinkOwner...))
		}, shapedAsNeither},
		{"create a Drink's ConfigMap without the Drink's labels", func(c client.Client) error {
			return c.Create(ctx, configMap("team-b", "tea-unlabelled", nil, metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Drink", Name: "tea-unlabelled", UID: "d2", Controller: ptr.To(true)}))
		}, shapedAsNeither},
		{"create a ConfigMap owned by a Drink and something else", func(c client.Client) error {
			return c.Create(ctx, configMap("team-b", "tea2", map[string]string{names.ManagedByLabel: names.ManagedByValue, names.DrinkLabel: "tea2"},
				metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Drink", Name: "tea2", UID: "d4", Controller: ptr.To(true)},
				metav1.OwnerReference{APIVersion: "v1", Kind: "Namespace", Name: "team-b", UID: "n1"}))
		}, shapedAsNeither},
		{"create a ConfigMap naming a Drink an owner, not its controller", func(c client.Client) error {
			return c.Create(ctx, configMap("team-b", "tea-owned", map[string]string{names.ManagedByLabel: names.ManagedByValue, names.DrinkLabel: "tea-owned"}, metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Drink", Name: "tea-owned", UID: "d3"}))
		}, shapedAsNeither},
		{"create its record in its namespace", func(c client.Client) error {
			return c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: "myoperator-accepted-config"}})
		}, ""},
		{"update a Drink's ConfigMap", func(c client.Client) error {
			return update(ctx, c, &corev1.ConfigMap{}, client.ObjectKey{Namespace: "team-b", Name: "tea"}, func(o client.Object) {
				o.(*corev1.ConfigMap).Data = map[string]string{"drink": "tea"}
			})
		}, ""},
		{"create a ConfigMap no Drink or Guestbook owns", func(c client.Client) error {
			return c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "loose"}})
		}, shapedAsNeither},
		{"update kube-system's aws-auth", func(c client.Client) error {
			return update(ctx, c, &corev1.ConfigMap{}, client.ObjectKeyFromObject(foreign), func(o client.Object) {
				o.(*corev1.ConfigMap).Data = map[string]string{"mapRoles": "- rolearn: attacker"}
			})
		}, "ConfigMap kube-system/aws-auth is neither"},
		{"take over kube-system's aws-auth by naming a Drink its owner", func(c client.Client) error {
			return update(ctx, c, &corev1.ConfigMap{}, client.ObjectKeyFromObject(foreign), func(o client.Object) {
				o.SetOwnerReferences(drinkOwner)
			})
		}, "ConfigMap kube-system/aws-auth is neither"},
		{"inject a CA bundle into its validating webhooks", func(c client.Client) error {
			return update(ctx, c, &admissionregistrationv1.ValidatingWebhookConfiguration{}, client.ObjectKey{Name: webhookName}, func(o client.Object) {
				for i := range o.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks {
					o.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks[i].ClientConfig.CABundle = cfg.CAData
				}
			})
		}, ""},
		{"point its validating webhooks at a URL", func(c client.Client) error {
			return update(ctx, c, &admissionregistrationv1.ValidatingWebhookConfiguration{}, client.ObjectKey{Name: webhookName}, func(o client.Object) {
				w := &o.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks[0]
				w.ClientConfig.Service, w.ClientConfig.URL = nil, ptr.To("https://attacker.example/validate")
			})
		}, "the operator changes only the CA bundle of validatingwebhookconfigurations"},
		{"widen a webhook's rules to every resource", func(c client.Client) error {
			return update(ctx, c, &admissionregistrationv1.ValidatingWebhookConfiguration{}, client.ObjectKey{Name: webhookName}, func(o client.Object) {
				w := &o.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks[0]
				w.Rules[0].APIGroups, w.Rules[0].Resources = []string{"*"}, []string{"*"}
			})
		}, "the operator changes only the CA bundle"},
		{"inject a CA bundle into the Drink CRD's conversion webhook", func(c client.Client) error {
			return update(ctx, c, &apiextensionsv1.CustomResourceDefinition{}, client.ObjectKey{Name: "drinks.example.com"}, func(o client.Object) {
				o.(*apiextensionsv1.CustomResourceDefinition).Spec.Conversion.Webhook.ClientConfig.CABundle = cfg.CAData
			})
		}, ""},
		{"stop serving a Drink version", func(c client.Client) error {
			return update(ctx, c, &apiextensionsv1.CustomResourceDefinition{}, client.ObjectKey{Name: "drinks.example.com"}, func(o client.Object) {
				o.(*apiextensionsv1.CustomResourceDefinition).Spec.Versions[0].Served = false
			})
		}, "the operator changes only the CA bundle of customresourcedefinitions drinks.example.com"},
	}
	// A row that must be refused is tried once: retried, a write admitted
	// before its policy was in force would pass once refused later. So its
	// policy is first known in force by a dry run of the same write
	// (admission policies judge dry runs too, and nothing persists).
	dryRun := client.NewDryRunClient(operator)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == "" {
				// Admitted: retried while RBAC's and the policies'
				// caches follow (a refusal here is never a write).
				testenv.Eventually(t, 10*time.Second, func() string {
					if err := tc.do(operator); err != nil {
						return "refused: " + err.Error()
					}
					return ""
				})
				return
			}
			testenv.Eventually(t, 10*time.Second, func() string {
				if err := tc.do(dryRun); err == nil || !strings.Contains(err.Error(), tc.want) {
					return "dry run: " + errString(err) + ", want refused with " + tc.want
				}
				return ""
			})
			switch err := tc.do(operator); {
			case err == nil:
				t.Errorf("admitted, want refused with %s", tc.want)
			case !strings.Contains(err.Error(), tc.want):
				t.Errorf("refused with %v, want %s", err, tc.want)
			}
		})
	}

	// cert-manager mode: cainjector injects the CA, so the operator may
	// change nothing of either.
	for _, o := range policies {
		if err := admin.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	installPolicies(ctx, t, admin, "config/certmanager-default")
	testenv.Eventually(t, 10*time.Second, func() string {
		err := update(ctx, operator, &apiextensionsv1.CustomResourceDefinition{}, client.ObjectKey{Name: "drinks.example.com"}, func(o client.Object) {
			o.(*apiextensionsv1.CustomResourceDefinition).Spec.Conversion.Webhook.ClientConfig.CABundle = append([]byte("\n"), cfg.CAData...)
		})
		if err == nil || !strings.Contains(err.Error(), "cert-manager") {
			return "cert-manager mode, a CA bundle injected by the operator: " + errString(err) + ", want refused"
		}
		return ""
	})
}

// installPolicies creates the ValidatingAdmissionPolicies and their
// bindings that the kustomization dir renders, and returns them.
func installPolicies(ctx context.Context, t *testing.T, admin client.Client, dir string) []client.Object {
	t.Helper()
	objs, err := manifests.Render(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []client.Object
	for _, o := range objs {
		if !strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") {
			continue
		}
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
		}
		out = append(out, o)
	}
	if len(out) == 0 {
		t.Fatalf("%s renders no admission policy", dir)
	}
	return out
}

// operatorClient is a client with a token of the operator's
// ServiceAccount, as its pods hold.
func operatorClient(ctx context.Context, t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	// A token bound to a pod, as the operator's containers have: the record's
	// policy admits no other.
	token := podToken(ctx, t, kubernetes.NewForConfigOrDie(cfg), "myoperator-controller-manager-0")
	c, err := client.New(&rest.Config{Host: cfg.Host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}},
		client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// update reads obj at key, mutates it and writes it back.
func update(ctx context.Context, c client.Client, obj client.Object, key client.ObjectKey, mutate func(client.Object)) error {
	if err := c.Get(ctx, key, obj); err != nil {
		return err
	}
	mutate(obj)
	return c.Update(ctx, obj)
}

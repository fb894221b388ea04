package doctor

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/internal/opconfig"
	"github.com/example/myoperator/internal/pause"
	"github.com/example/myoperator/internal/plugin"
	"github.com/example/myoperator/internal/render"
)

const ns = "myoperator-system"

// drink returns a Drink of the namespace cafe authored in version, with
// its spec.
func drink(name, version string, spec drinksv1.DrinkSpec) drinksv1.Drink {
	d := drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "cafe", Name: name, UID: types.UID("cafe-" + name)}, Spec: spec}
	if version != "" {
		d.Annotations = map[string]string{drinksv1.AuthoredVersionAnnotation: version}
	}
	return d
}

// configMapOf is the ConfigMap the operator writes for d.
func configMapOf(t *testing.T, d drinksv1.Drink) corev1.ConfigMap {
	t.Helper()
	data, err := render.ConfigMapData(&d)
	if err != nil {
		t.Fatal(err)
	}
	return corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name,
		Labels:          map[string]string{names.ManagedByLabel: names.ManagedByValue, names.DrinkLabel: d.Name},
		Annotations:     map[string]string{names.LayoutAnnotation: render.LayoutName(drinksversions.Drinks, &d)},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Drink", Name: d.Name, UID: d.UID, Controller: ptr.To(true)}}},
		Data: data}
}

func caPEM(t *testing.T, cn string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, NotBefore: time.Now(),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// healthy returns the State of a healthy installation: a Drink authored
// in each version and one in the course's form, each with its ConfigMap;
// webhooks through the Service with the current CA; a running leader.
func healthy(t *testing.T) *State {
	t.Helper()
	ca := caPEM(t, "myoperator-ca")
	svc := &admissionregistrationv1.ServiceReference{Namespace: ns, Name: names.WebhookService}
	cc := admissionregistrationv1.WebhookClientConfig{Service: svc, CABundle: ca}
	s := &State{
		Install: plugin.Install{Namespace: ns, Found: true, Args: []string{"--leader-elect"}, CertSecret: names.CertSecret},
		Pods: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mgr-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mgr-b"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}},
		Lease:      &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("mgr-a_1234")}},
		CertSecret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.CertSecret}, Data: map[string][]byte{"ca.crt": ca}},
		Mutating: &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: names.MutatingWebhookConfig},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "mdrink.example.com", ClientConfig: cc}}},
		Validating: &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: names.ValidatingWebhookConfig},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "vdrink.example.com", ClientConfig: cc}}},
		CRDs:     map[string]*apiextensionsv1.CustomResourceDefinition{},
		Services: map[string]*corev1.Service{ns + "/" + svc.Name: {}},
		EndpointSlices: map[string][]discoveryv1.EndpointSlice{ns + "/" + svc.Name: {{Endpoints: []discoveryv1.Endpoint{
			{Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}}, {Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}}}}},
	}
	for _, name := range CRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:   apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v0"}, {Name: "v1", Storage: true}}},
			Status: apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: []string{"v1"}}}
		if name == names.DrinkCRD {
			crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig: &apiextensionsv1.WebhookClientConfig{CABundle: ca, Service: &apiextensionsv1.ServiceReference{Namespace: ns, Name: svc.Name}}}}
		}
		s.CRDs[name] = crd
	}
	s.Drinks = []drinksv1.Drink{
		drink("alpha", "v1alpha1", drinksv1.DrinkSpec{DisplayName: "A", Beverage: "tea", Size: "Large"}),
		drink("beta", "v1beta1", drinksv1.DrinkSpec{DisplayName: "B", Beverage: "tea", Size: "Small", SugarCubes: 2}),
		drink("one", "v1", drinksv1.DrinkSpec{DisplayName: "C", Beverage: "tea", Extras: []string{"milk", "honey"}}),
		// The course's own Drink, stored before the operator recorded
		// authored versions: v1's course layout (name, drink).
		drink("course", "", drinksv1.DrinkSpec{Name: "D", Drink: "coffee"}),
	}
	for _, d := range s.Drinks {
		s.ConfigMaps = append(s.ConfigMaps, configMapOf(t, d))
	}
	e := opconfig.Effective(operatorv1alpha1.OperatorConfigSpec{LogLevel: operatorv1alpha1.LogDebug})
	s.OperatorConfig = &operatorv1alpha1.OperatorConfig{Status: operatorv1alpha1.OperatorConfigStatus{Effective: &e}}
	s.Record = &opconfig.Record{Effective: e}
	s.Policies = map[string]PolicyState{}
	for _, name := range Policies {
		s.Policies[name] = PolicyState{Policy: true, Binding: true, Deny: true}
	}
	return s
}

// TestChecks breaks each invariant of a healthy State in a few ways; each
// must give its finding, and the healthy State and the Drinks the
// operator leaves alone none.
func TestChecks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check func(*State) []Finding
		brk   func(*State)
		want  string // in every finding; "" for no finding
	}{
		{"drink-configmap: healthy, every version and the course's form", DrinkConfigMaps, func(*State) {}, ""},
		{"drink-configmap: missing", DrinkConfigMaps, func(s *State) { s.ConfigMaps = s.ConfigMaps[1:] }, "its ConfigMap cafe/alpha is missing"},
		{"drink-configmap: another layout", DrinkConfigMaps, func(s *State) { s.ConfigMaps[1].Annotations[names.LayoutAnnotation] = "v1" },
			`is in layout "v1", want "v1beta1"`},
		{"drink-configmap: a key's value", DrinkConfigMaps, func(s *State) { s.ConfigMaps[2].Data["extras"] = "milk" }, `has extras="milk", want "honey,milk"`},
		{"drink-configmap: a key missing", DrinkConfigMaps, func(s *State) { delete(s.ConfigMaps[3].Data, "drink") }, `has no key drink`},
		{"drink-configmap: course Drink in v1's own layout", DrinkConfigMaps, func(s *State) {
			s.ConfigMaps[3].Annotations[names.LayoutAnnotation] = "v1"
		}, `is in layout "v1", want "v1+course"`},
		{"drink-configmap: labels removed", DrinkConfigMaps, func(s *State) { s.ConfigMaps[0].Labels = nil }, "lacks the labels"},
		{"drink-configmap: someone else's under the name", DrinkConfigMaps, func(s *State) { s.ConfigMaps[0].OwnerReferences = nil }, "is not controlled by the Drink"},
		{"drink-configmap: a second one", DrinkConfigMaps, func(s *State) {
			extra := configMapOf(t, s.Drinks[0])
			extra.Name = "alpha-copy"
			s.ConfigMaps = append(s.ConfigMaps, extra)
		}, "ConfigMap cafe/alpha-copy is controlled by the Drink too"},
		{"drink-configmap: no authored version", DrinkConfigMaps, func(s *State) { s.Drinks[0].Annotations = nil }, "no recorded authored version"},
		{"drink-configmap: paused, ConfigMap stale", DrinkConfigMaps, func(s *State) {
			s.Drinks[0].Annotations[pause.Annotation] = "true"
			s.ConfigMaps[0].Data["drink"] = "old"
		}, ""},
		{"drink-configmap: paused false is kept", DrinkConfigMaps, func(s *State) {
			s.Drinks[0].Annotations[pause.Annotation] = "false"
			s.ConfigMaps[0].Data["drink"] = "old"
		}, `has drink="old"`},
		{"drink-configmap: outside --watch-namespaces", DrinkConfigMaps, func(s *State) {
			s.Install.WatchNamespaces = []string{"other"}
			s.ConfigMaps = nil
		}, ""},
		{"drink-configmap: inside --watch-namespaces", DrinkConfigMaps, func(s *State) {
			s.Install.WatchNamespaces = []string{"other", "cafe"}
			s.ConfigMaps = s.ConfigMaps[1:]
		}, "its ConfigMap cafe/alpha is missing"},
		{"drink-configmap: operator Unmanaged", DrinkConfigMaps, func(s *State) {
			s.OperatorConfig.Status.Effective.ManagementState = operatorv1alpha1.Unmanaged
			s.ConfigMaps = s.ConfigMaps[1:]
		}, ""},
		{"drink-configmap: being deleted", DrinkConfigMaps, func(s *State) {
			s.Drinks[0].DeletionTimestamp = &metav1.Time{}
			s.ConfigMaps = s.ConfigMaps[1:]
		}, ""},
		{"drink-configmap: its namespace being deleted (ConfigMaps went first)", DrinkConfigMaps, func(s *State) {
			s.Deleting = map[string]bool{"cafe": true}
			s.ConfigMaps = s.ConfigMaps[1:]
		}, ""},
		{"drink-configmap: another namespace being deleted", DrinkConfigMaps, func(s *State) {
			s.Deleting = map[string]bool{"other": true}
			s.ConfigMaps = s.ConfigMaps[1:]
		}, "its ConfigMap cafe/alpha is missing"},

		{"orphaned-configmap: healthy", OrphanedConfigMaps, func(*State) {}, ""},
		{"orphaned-configmap: Drink gone", OrphanedConfigMaps, func(s *State) { s.Drinks = s.Drinks[1:] }, "configmap/cafe/alpha is labelled example.com/drink=alpha but no Drink cafe/alpha controls it"},
		{"orphaned-configmap: Drink recreated (another UID)", OrphanedConfigMaps, func(s *State) { s.Drinks[0].UID = "new" }, "no Drink cafe/alpha controls it"},
		{"orphaned-configmap: its namespace being deleted (Drinks went first)", OrphanedConfigMaps, func(s *State) {
			s.Deleting = map[string]bool{"cafe": true}
			s.Drinks = s.Drinks[1:]
		}, ""},
		{"orphaned-configmap: no controller", OrphanedConfigMaps, func(s *State) { s.ConfigMaps[0].OwnerReferences = nil }, "it has no controller"},
		{"orphaned-configmap: not the operator's", OrphanedConfigMaps, func(s *State) {
			s.Drinks = s.Drinks[1:]
			delete(s.ConfigMaps[0].Labels, names.ManagedByLabel)
		}, ""},

		{"leader: healthy", LeaseHolder, func(*State) {}, ""},
		{"leader: holder gone", LeaseHolder, func(s *State) { s.Lease.Spec.HolderIdentity = ptr.To("mgr-old_1") }, `is held by "mgr-old_1", which names no pod`},
		{"leader: holder not running", LeaseHolder, func(s *State) { s.Pods[0].Status.Phase = corev1.PodFailed }, "which is failed, not running"},
		{"leader: holder terminating", LeaseHolder, func(s *State) { s.Pods[0].DeletionTimestamp = &metav1.Time{} }, "which is terminating"},
		{"leader: no holder", LeaseHolder, func(s *State) { s.Lease.Spec.HolderIdentity = nil }, "has no holder"},
		{"leader: no Lease", LeaseHolder, func(s *State) { s.Lease = nil }, "is missing: no replica leads"},
		{"leader: no Lease, leader election off", LeaseHolder, func(s *State) { s.Lease, s.Install.Args = nil, nil }, ""},

		{"webhook-ca: healthy", WebhookCA, func(*State) {}, ""},
		{"webhook-ca: validating stale", WebhookCA, func(s *State) { s.Validating.Webhooks[0].ClientConfig.CABundle = caPEM(t, "old") },
			"validatingwebhookconfiguration/myoperator-validating-webhook-configuration webhook vdrink.example.com caBundle does not hold the current CA"},
		{"webhook-ca: mutating empty", WebhookCA, func(s *State) { s.Mutating.Webhooks[0].ClientConfig.CABundle = nil }, "webhook mdrink.example.com caBundle does not hold"},
		{"webhook-ca: conversion stale", WebhookCA, func(s *State) {
			s.CRDs[names.DrinkCRD].Spec.Conversion.Webhook.ClientConfig.CABundle = caPEM(t, "old")
		}, "crd/drinks.example.com conversion webhook caBundle does not hold"},
		{"webhook-ca: CA rotated, Secret newer", WebhookCA, func(s *State) { s.CertSecret.Data["ca.crt"] = caPEM(t, "new") }, "does not hold the current CA \"new\""},
		{"webhook-ca: bundle holds old and current", WebhookCA, func(s *State) {
			s.Validating.Webhooks[0].ClientConfig.CABundle = append(caPEM(t, "old"), s.CertSecret.Data["ca.crt"]...)
		}, ""},
		{"webhook-ca: certificates from files (OLM), no Secret", WebhookCA, func(s *State) {
			s.Install.CertSecret, s.CertSecret = "", nil
			s.Validating.Webhooks[0].ClientConfig.CABundle = caPEM(t, "olm")
		}, ""},
		{"webhook-ca: no Secret", WebhookCA, func(s *State) { s.CertSecret = nil }, "secret/myoperator-system/myoperator-webhook-server-cert is missing"},
		{"webhook-ca: configuration deleted", WebhookCA, func(s *State) { s.Mutating = nil }, "mutatingwebhookconfiguration/myoperator-mutating-webhook-configuration is missing"},

		{"webhook-endpoints: healthy", WebhookEndpoints, func(*State) {}, ""},
		{"webhook-endpoints: none ready", WebhookEndpoints, func(s *State) {
			s.EndpointSlices[ns+"/"+names.WebhookService][0].Endpoints[1].Conditions.Ready = ptr.To(false)
		}, "service/myoperator-system/myoperator-webhook-service has no ready endpoint"},
		{"webhook-endpoints: no slices", WebhookEndpoints, func(s *State) { s.EndpointSlices = nil }, "has no ready endpoint"},
		{"webhook-endpoints: Service missing", WebhookEndpoints, func(s *State) { s.Services[ns+"/"+names.WebhookService] = nil }, "is missing;"},
		{"webhook-endpoints: by URL, nothing to check", WebhookEndpoints, func(s *State) {
			s.EndpointSlices = nil
			s.Mutating.Webhooks[0].ClientConfig.Service = nil
			s.Validating.Webhooks[0].ClientConfig.Service = nil
			s.CRDs[names.DrinkCRD].Spec.Conversion.Webhook.ClientConfig.Service = nil
		}, ""},

		{"stored-versions: healthy", StoredVersions, func(*State) {}, ""},
		{"stored-versions: Drinks not trimmed", StoredVersions, func(s *State) { s.CRDs[names.DrinkCRD].Status.StoredVersions = []string{"v0", "v1"} },
			"crd/drinks.example.com status.storedVersions is [v0 v1], want [v1]"},
		{"stored-versions: another CRD", StoredVersions, func(s *State) { s.CRDs[names.GuestbookCRD].Status.StoredVersions = []string{"v0"} }, "kubectl patch crd guestbooks.webapp.my.domain"},
		{"stored-versions: CRD missing", StoredVersions, func(s *State) { delete(s.CRDs, names.OperatorConfigCRD) }, "crd/operatorconfigs.operator.example.com is missing"},

		{"accepted-config: healthy", AcceptedConfig, func(*State) {}, ""},
		{"accepted-config: sources differ only", AcceptedConfig, func(s *State) {
			s.Record.Effective.Sources = operatorv1alpha1.EffectiveSources{}
		}, ""},
		{"accepted-config: record differs", AcceptedConfig, func(s *State) { s.Record.Effective.LogLevel = operatorv1alpha1.LogError },
			"configmap/myoperator-system/myoperator-accepted-config records {managementState: Managed, logLevel: Error"},
		{"accepted-config: no record", AcceptedConfig, func(s *State) { s.Record = nil }, "is missing: no configuration was accepted"},
		{"accepted-config: unusable record", AcceptedConfig, func(s *State) {
			s.Record, s.RecordErr = nil, &opconfig.UnusableRecordError{Namespace: ns, Reason: "it has no data key"}
		}, "is not a usable configuration record"},
		{"accepted-config: no OperatorConfig", AcceptedConfig, func(s *State) { s.OperatorConfig = nil }, "operatorconfig/cluster is missing"},
		{"accepted-config: not reconciled", AcceptedConfig, func(s *State) { s.OperatorConfig.Status.Effective = nil }, "has no status.effective"},
		{"admission-policies: healthy", AdmissionPolicies, func(*State) {}, ""},
		{"admission-policies: none, as OLM installs", AdmissionPolicies, func(s *State) { s.Policies = nil }, "an OLM install carries none"},
		{"admission-policies: the ConfigMaps' policy not bound", AdmissionPolicies, func(s *State) {
			s.Policies[names.ConfigMapsPolicy] = PolicyState{Policy: true}
		}, "validatingadmissionpolicy/" + names.ConfigMapsPolicy + " not bound"},
		{"admission-policies: the record's binding only warns", AdmissionPolicies, func(s *State) {
			s.Policies[names.RecordPolicy] = PolicyState{Policy: true, Binding: true}
		}, "validatingadmissionpolicy/" + names.RecordPolicy + " its binding does not deny"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := healthy(t)
			tc.brk(s)
			got := tc.check(s)
			if tc.want == "" {
				if len(got) > 0 {
					t.Fatalf("want no finding, got %+v", got)
				}
				return
			}
			if len(got) == 0 {
				t.Fatalf("want a finding with %q, got none", tc.want)
			}
			for _, f := range got {
				if text := f.Object + " " + f.Problem + " " + f.Fix; !strings.Contains(text, tc.want) {
					t.Errorf("finding %q, want only findings containing %q", text, tc.want)
				}
				if !strings.HasPrefix(f.Fix, "kubectl ") && !strings.HasPrefix(f.Fix, "reinstall") {
					t.Errorf("fix %q is not a command", f.Fix)
				}
			}
		})
	}
}

// TestRunHealthy: every check together finds nothing on a healthy state,
// and names its check on a finding.
func TestRunHealthy(t *testing.T) {
	if got := Run(healthy(t)); len(got) > 0 {
		t.Fatalf("healthy state: %+v", got)
	}
	s := healthy(t)
	s.Lease = nil
	got := Run(s)
	if len(got) != 1 || got[0].Check != "leader" {
		t.Fatalf("want the leader check's finding, got %+v", got)
	}
}

func TestLeaderElectArgs(t *testing.T) {
	if !leaderElect([]string{"--leader-elect"}) || leaderElect([]string{"--leader-elect", "--leader-elect=false"}) || leaderElect(nil) {
		t.Error("leaderElect misreads --leader-elect")
	}
}

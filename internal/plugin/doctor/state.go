package doctor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/internal/opconfig"
	"github.com/example/myoperator/internal/plugin"
)

// CRDs are the operator's CustomResourceDefinitions.
var CRDs = []string{names.DrinkCRD, names.GuestbookCRD, names.OperatorConfigCRD}

// State is what the checks look at, read once from the cluster.
type State struct {
	Install plugin.Install
	// Pods are the manager's pods.
	Pods []corev1.Pod
	// Lease is the leader election Lease; nil when missing.
	Lease *coordinationv1.Lease
	// CertSecret holds the webhook CA (ca.crt); nil when missing.
	CertSecret *corev1.Secret
	// Mutating and Validating are the operator's webhook configurations;
	// nil when missing.
	Mutating   *admissionregistrationv1.MutatingWebhookConfiguration
	Validating *admissionregistrationv1.ValidatingWebhookConfiguration
	// CRDs are the operator's CRDs that exist, by name.
	CRDs map[string]*apiextensionsv1.CustomResourceDefinition
	// Services are the Services the webhooks call, by namespace/name; nil
	// for one that is missing.
	Services map[string]*corev1.Service
	// EndpointSlices are those of the Services, by namespace/name.
	EndpointSlices map[string][]discoveryv1.EndpointSlice
	// Drinks are the Drinks (of Namespace, or all).
	Drinks []drinksv1.Drink
	// ConfigMaps are the ConfigMaps labelled for a Drink (of Namespace, or
	// all) and those named as a Drink, even when foreign.
	ConfigMaps []corev1.ConfigMap
	// OperatorConfig is the OperatorConfig cluster; nil when missing.
	OperatorConfig *operatorv1alpha1.OperatorConfig
	// Record is the accepted configuration; nil with RecordErr nil when
	// there is none.
	Record    *opconfig.Record
	RecordErr error
	// Policies are the admission policies of Policies, by name.
	Policies map[string]PolicyState
	// Deleting are the namespaces, of those holding Drinks or their
	// ConfigMaps, that are being deleted. The namespace controller removes
	// their objects kind by kind, so one may hold Drinks whose ConfigMaps
	// are already gone (or the reverse), and the API server refuses the
	// operator a new object there: nothing to find or fix. A namespace the
	// user may not read counts as not being deleted.
	Deleting map[string]bool
}

// Policies are the ValidatingAdmissionPolicies that narrow the operator's
// ServiceAccount (config/admission-policy), each bound under its own name.
var Policies = []string{names.ConfigMapsPolicy, names.CAInjectionPolicy, names.RecordPolicy}

// PolicyState is what Read found of one of Policies.
type PolicyState struct {
	// Policy and Binding say whether each exists; Deny, whether the
	// binding binds the policy and denies what it refuses (not only warns
	// or audits).
	Policy, Binding, Deny bool
}

// Read reads the State: the installation from operatorNS, the Drinks and
// their ConfigMaps from namespace ("" for every namespace).
func Read(ctx context.Context, c client.Reader, operatorNS, namespace string) (*State, error) {
	s := &State{CRDs: map[string]*apiextensionsv1.CustomResourceDefinition{},
		Services: map[string]*corev1.Service{}, EndpointSlices: map[string][]discoveryv1.EndpointSlice{}}
	var err error
	if s.Install, err = plugin.ReadInstall(ctx, c, operatorNS); err != nil {
		return nil, err
	}
	sel, err := labels.Parse(plugin.PodSelector)
	if err != nil {
		return nil, err
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(operatorNS), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing the manager's pods: %w", err)
	}
	s.Pods = pods.Items
	get := func(key client.ObjectKey, obj client.Object) (bool, error) {
		err := c.Get(ctx, key, obj)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("reading %T %s: %w", obj, key, err)
		}
		return true, nil
	}
	var found bool
	lease := &coordinationv1.Lease{}
	if found, err = get(client.ObjectKey{Namespace: operatorNS, Name: names.LeaderElectionID}, lease); err != nil {
		return nil, err
	} else if found {
		s.Lease = lease
	}
	if s.Install.CertSecret != "" {
		secret := &corev1.Secret{}
		if found, err = get(client.ObjectKey{Namespace: operatorNS, Name: s.Install.CertSecret}, secret); err != nil {
			return nil, err
		} else if found {
			s.CertSecret = secret
		}
	}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if found, err = get(client.ObjectKey{Name: names.MutatingWebhookConfig}, mwc); err != nil {
		return nil, err
	} else if found {
		s.Mutating = mwc
	}
	s.Policies = map[string]PolicyState{}
	for _, name := range Policies {
		var st PolicyState
		if st.Policy, err = get(client.ObjectKey{Name: name}, &admissionregistrationv1.ValidatingAdmissionPolicy{}); err != nil {
			return nil, err
		}
		b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		if st.Binding, err = get(client.ObjectKey{Name: name}, b); err != nil {
			return nil, err
		}
		st.Deny = st.Binding && b.Spec.PolicyName == name && slices.Contains(b.Spec.ValidationActions, admissionregistrationv1.Deny)
		s.Policies[name] = st
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if found, err = get(client.ObjectKey{Name: names.ValidatingWebhookConfig}, vwc); err != nil {
		return nil, err
	} else if found {
		s.Validating = vwc
	}
	for _, name := range CRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if found, err = get(client.ObjectKey{Name: name}, crd); err != nil {
			return nil, err
		} else if found {
			s.CRDs[name] = crd
		}
	}
	for _, w := range s.Webhooks() {
		if w.Service == nil {
			continue
		}
		key := client.ObjectKey{Namespace: w.Service.Namespace, Name: w.Service.Name}
		if _, done := s.Services[key.String()]; done {
			continue
		}
		svc := &corev1.Service{}
		if found, err = get(key, svc); err != nil {
			return nil, err
		}
		s.Services[key.String()] = nil
		if found {
			s.Services[key.String()] = svc
		}
		eps := &discoveryv1.EndpointSliceList{}
		if err := c.List(ctx, eps, client.InNamespace(key.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: key.Name}); err != nil {
			return nil, fmt.Errorf("listing the EndpointSlices of Service %s: %w", key, err)
		}
		s.EndpointSlices[key.String()] = eps.Items
	}
	if _, ok := s.CRDs[names.DrinkCRD]; ok {
		drinks := &drinksv1.DrinkList{}
		if err := c.List(ctx, drinks, client.InNamespace(namespace)); err != nil {
			return nil, fmt.Errorf("listing Drinks: %w", err)
		}
		s.Drinks = drinks.Items
	}
	hasDrink, err := labels.NewRequirement(names.DrinkLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	cms := &corev1.ConfigMapList{}
	if err := c.List(ctx, cms, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*hasDrink)}); err != nil {
		return nil, fmt.Errorf("listing the Drinks' ConfigMaps: %w", err)
	}
	s.ConfigMaps = cms.Items
	if err := s.readDeleting(ctx, c); err != nil {
		return nil, err
	}
	// A ConfigMap a Drink controls without the labels (their labels
	// removed) is found by its owner, in the metadata of the ConfigMaps of
	// each namespace with Drinks.
	if err := s.readUnlabelled(ctx, c); err != nil {
		return nil, err
	}
	// A ConfigMap under a Drink's name without the labels (someone else's,
	// or one whose labels were removed) is read by name.
	for _, d := range s.Drinks {
		if s.configMap(d.Namespace, d.Name) != nil {
			continue
		}
		cm := &corev1.ConfigMap{}
		if found, err = get(client.ObjectKey{Namespace: d.Namespace, Name: d.Name}, cm); err != nil {
			return nil, err
		} else if found {
			s.ConfigMaps = append(s.ConfigMaps, *cm)
		}
	}
	if _, ok := s.CRDs[names.OperatorConfigCRD]; ok {
		oc := &operatorv1alpha1.OperatorConfig{}
		if found, err = get(client.ObjectKey{Name: operatorv1alpha1.SingletonName}, oc); err != nil {
			return nil, err
		} else if found {
			s.OperatorConfig = oc
		}
	}
	s.Record, s.RecordErr = opconfig.ReadRecord(ctx, c, operatorNS)
	var unusable *opconfig.UnusableRecordError
	if s.RecordErr != nil && !errors.As(s.RecordErr, &unusable) {
		return nil, s.RecordErr
	}
	return s, nil
}

// readUnlabelled adds to s.ConfigMaps, metadata only, the ConfigMaps
// controlled by a Drink that the label selector missed.
func (s *State) readUnlabelled(ctx context.Context, c client.Reader) error {
	namespaces := map[string]bool{}
	for _, d := range s.Drinks {
		namespaces[d.Namespace] = true
	}
	for _, ns := range slices.Sorted(maps.Keys(namespaces)) {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return fmt.Errorf("listing the ConfigMaps of namespace %s: %w", ns, err)
		}
		for _, m := range list.Items {
			ref := metav1.GetControllerOf(&m)
			if ref == nil || ref.Kind != "Drink" || s.configMap(m.Namespace, m.Name) != nil {
				continue
			}
			s.ConfigMaps = append(s.ConfigMaps, corev1.ConfigMap{ObjectMeta: m.ObjectMeta})
		}
	}
	return nil
}

// configMap returns the ConfigMap namespace/name of s; nil when absent.
func (s *State) configMap(namespace, name string) *corev1.ConfigMap {
	for i := range s.ConfigMaps {
		if cm := &s.ConfigMaps[i]; cm.Namespace == namespace && cm.Name == name {
			return cm
		}
	}
	return nil
}

// Webhook is one webhook the API server calls for the operator: an
// admission webhook of either configuration or a CRD's conversion.
type Webhook struct {
	// Name says where it is configured, for findings:
	// mutatingwebhookconfiguration/NAME webhook W, or crd/NAME conversion.
	Name     string
	CABundle []byte
	Service  *admissionregistrationv1.ServiceReference
	URL      string
}

// Webhooks lists every webhook the operator's configurations and CRDs
// name.
func (s *State) Webhooks() []Webhook {
	var out []Webhook
	if s.Mutating != nil {
		for _, w := range s.Mutating.Webhooks {
			out = append(out, webhook("mutatingwebhookconfiguration/"+s.Mutating.Name+" webhook "+w.Name, w.ClientConfig))
		}
	}
	if s.Validating != nil {
		for _, w := range s.Validating.Webhooks {
			out = append(out, webhook("validatingwebhookconfiguration/"+s.Validating.Name+" webhook "+w.Name, w.ClientConfig))
		}
	}
	for _, name := range CRDs {
		crd := s.CRDs[name]
		if crd == nil || crd.Spec.Conversion == nil || crd.Spec.Conversion.Webhook == nil || crd.Spec.Conversion.Webhook.ClientConfig == nil {
			continue
		}
		cc := crd.Spec.Conversion.Webhook.ClientConfig
		w := Webhook{Name: "crd/" + name + " conversion webhook", CABundle: cc.CABundle}
		if cc.URL != nil {
			w.URL = *cc.URL
		}
		if cc.Service != nil {
			w.Service = &admissionregistrationv1.ServiceReference{Namespace: cc.Service.Namespace, Name: cc.Service.Name, Path: cc.Service.Path, Port: cc.Service.Port}
		}
		out = append(out, w)
	}
	return out
}

func webhook(name string, cc admissionregistrationv1.WebhookClientConfig) Webhook {
	w := Webhook{Name: name, CABundle: cc.CABundle, Service: cc.Service}
	if cc.URL != nil {
		w.URL = *cc.URL
	}
	return w
}

// readDeleting fills Deleting from the namespaces of the Drinks and
// ConfigMaps read.
func (s *State) readDeleting(ctx context.Context, c client.Reader) error {
	s.Deleting = map[string]bool{}
	check := func(name string) error {
		if _, read := s.Deleting[name]; read {
			return nil
		}
		ns := &corev1.Namespace{}
		err := c.Get(ctx, client.ObjectKey{Name: name}, ns)
		switch {
		case apierrors.IsNotFound(err):
			s.Deleting[name] = true // gone while read: its objects go too
		case apierrors.IsForbidden(err):
			s.Deleting[name] = false
		case err != nil:
			return fmt.Errorf("reading namespace %s: %w", name, err)
		default:
			s.Deleting[name] = ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating
		}
		return nil
	}
	for _, d := range s.Drinks {
		if err := check(d.Namespace); err != nil {
			return err
		}
	}
	for _, cm := range s.ConfigMaps {
		if err := check(cm.Namespace); err != nil {
			return err
		}
	}
	return nil
}

package doctor

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/internal/opconfig"
	"github.com/example/myoperator/internal/pause"
	"github.com/example/myoperator/internal/render"
)

// Finding is one broken invariant.
type Finding struct {
	// Check is the name of the check that found it.
	Check string `json:"check"`
	// Object is what is wrong, as kind/namespace/name.
	Object string `json:"object"`
	// Problem says what is wrong.
	Problem string `json:"problem"`
	// Fix is the command that fixes it.
	Fix string `json:"fix"`
}

// Check is one invariant.
type Check struct {
	// Name names the invariant in findings.
	Name string
	// Invariant says what holds on a healthy installation.
	Invariant string
	Run       func(*State) []Finding
}

// Checks are every invariant doctor checks, in the order it reports them.
var Checks = []Check{
	{"drink-configmap", "every Drink has exactly one ConfigMap, owned by it, in its authored version's layout", DrinkConfigMaps},
	{"orphaned-configmap", "no ConfigMap labelled for a Drink outlives it", OrphanedConfigMaps},
	{"leader", "the Lease holder is a running pod of the manager", LeaseHolder},
	{"webhook-ca", "every webhook (validating, mutating, CRD conversion) carries the current CA", WebhookCA},
	{"webhook-endpoints", "every webhook's Service has a ready endpoint", WebhookEndpoints},
	{"stored-versions", "each CRD's status.storedVersions is its storage version alone", StoredVersions},
	{"accepted-config", "the accepted configuration equals the OperatorConfig's effective configuration", AcceptedConfig},
	{"admission-policies", "the admission policies that narrow the operator's ServiceAccount are installed and bound to deny", AdmissionPolicies},
}

// AdmissionPolicies checks that config/admission-policy's policies exist, each with
// its binding denying. An install without them (OLM's bundle cannot carry
// a ValidatingAdmissionPolicy) works, but whoever takes an operator pod
// then holds the ServiceAccount's RBAC rights whole: any ConfigMap in the
// cluster, its webhook configurations and the Drink CRD.
func AdmissionPolicies(s *State) []Finding {
	var out []Finding
	for _, name := range Policies {
		st := s.Policies[name]
		var problem string
		switch {
		case !st.Policy:
			problem = "missing: nothing narrows the operator's ServiceAccount beyond its RBAC rights (an OLM install carries none of these policies)"
		case !st.Binding:
			problem = "not bound: the policy refuses nothing"
		case !st.Deny:
			problem = "its binding does not deny (validationActions without Deny, or another policy's name): what it refuses is still written"
		default:
			continue
		}
		out = append(out, Finding{Check: "admission-policies", Object: "validatingadmissionpolicy/" + name, Problem: problem,
			Fix: "kubectl apply -k config/admission-policy (config/certmanager-default's with cert-manager; docs/olm.md)"})
	}
	return out
}

// Run runs every check on s.
func Run(s *State) []Finding {
	var out []Finding
	for _, c := range Checks {
		for _, f := range c.Run(s) {
			f.Check = c.Name
			out = append(out, f)
		}
	}
	return out
}

// restart is the fix for what the manager writes on its own: a new
// replica re-reads everything, reconciles every object, injects its CA
// and migrates stored versions at start.
func restart(s *State) string {
	return fmt.Sprintf("kubectl -n %s rollout restart deployment %s", s.Install.Namespace, names.Deployment)
}

// Exempt says why the operator is not expected to keep a Drink's
// ConfigMap ("" when it is): the Drink is being deleted, paused, or in a
// namespace the manager does not watch, or the operator is told to leave
// every operand alone (managementState Unmanaged).
func (s *State) Exempt(d *drinksv1.Drink) string {
	switch {
	case s.OperatorConfig != nil && s.OperatorConfig.Status.Effective != nil &&
		s.OperatorConfig.Status.Effective.ManagementState == operatorv1alpha1.Unmanaged:
		return "the operator is Unmanaged (OperatorConfig cluster)"
	case d.DeletionTimestamp != nil:
		return "being deleted"
	case s.Deleting[d.Namespace]:
		return "its namespace is being deleted"
	case pause.Requested(d.Annotations):
		// The operator leaves a paused Drink alone (internal/pause): its
		// ConfigMap is whatever it was, which is not a finding.
		return "paused (" + pause.Annotation + ": \"true\")"
	case !s.Install.InScope(d.Namespace):
		return "outside --watch-namespaces=" + strings.Join(s.Install.WatchNamespaces, ",")
	}
	return ""
}

// DrinkConfigMaps finds where this fails: every Drink the operator keeps
// has exactly one ConfigMap it controls, named as the Drink, labelled as
// the operator's, and in the layout of the version the Drink was authored
// in (the course's layout for a Drink in the course's form), each key
// holding its value.
func DrinkConfigMaps(s *State) []Finding {
	var out []Finding
	for i := range s.Drinks {
		d := &s.Drinks[i]
		if s.Exempt(d) != "" {
			continue
		}
		obj := "drink/" + d.Namespace + "/" + d.Name
		var owned []*corev1.ConfigMap
		for j := range s.ConfigMaps {
			if cm := &s.ConfigMaps[j]; cm.Namespace == d.Namespace && controller(cm) == d.UID {
				owned = append(owned, cm)
			}
		}
		for _, cm := range owned {
			if cm.Name != d.Name {
				out = append(out, Finding{Object: obj,
					Problem: fmt.Sprintf("ConfigMap %s/%s is controlled by the Drink too; its own is %s", cm.Namespace, cm.Name, d.Name),
					Fix:     fmt.Sprintf("kubectl -n %s delete configmap %s", cm.Namespace, cm.Name)})
			}
		}
		cm := s.configMap(d.Namespace, d.Name)
		switch {
		case cm == nil:
			out = append(out, Finding{Object: obj, Problem: "its ConfigMap " + d.Namespace + "/" + d.Name + " is missing",
				Fix: restart(s) + "   # the operator creates it; if it does not, kubectl -n " + d.Namespace + " describe drink " + d.Name + " says why"})
			continue
		case controller(cm) != d.UID:
			out = append(out, Finding{Object: obj,
				Problem: fmt.Sprintf("ConfigMap %s/%s is not controlled by the Drink (someone else's object holds its name)", cm.Namespace, cm.Name),
				Fix:     fmt.Sprintf("kubectl -n %s delete configmap %s   # after saving what it holds; the operator then creates the Drink's", cm.Namespace, cm.Name)})
			continue
		}
		if _, err := render.ConfigMapData(d); err != nil {
			out = append(out, Finding{Object: obj, Problem: "has no layout to check its ConfigMap against: " + err.Error(),
				Fix: fmt.Sprintf("kubectl -n %s edit drink %s   # write its spec once through a served version", d.Namespace, d.Name)})
			continue
		}
		if p := layoutProblem(cm, d); p != "" {
			out = append(out, Finding{Object: obj, Problem: fmt.Sprintf("ConfigMap %s/%s %s", cm.Namespace, cm.Name, p),
				Fix: fmt.Sprintf("kubectl -n %s delete configmap %s   # the operator writes it again in the Drink's layout", cm.Namespace, cm.Name)})
		}
	}
	return out
}

// layoutProblem says how cm differs from the ConfigMap of d: its layout,
// its labels, each key's value.
func layoutProblem(cm *corev1.ConfigMap, d *drinksv1.Drink) string {
	want, _ := render.ConfigMapData(d) // DrinkConfigMaps reported an error
	layout := render.LayoutName(drinksversions.Drinks, d)
	var problems []string
	if got := cm.Annotations[names.LayoutAnnotation]; got != layout {
		problems = append(problems, fmt.Sprintf("is in layout %q, want %q (%s)", got, layout, strings.Join(drinksversions.LayoutKeys(want), ",")))
	}
	if cm.Labels[names.ManagedByLabel] != names.ManagedByValue || cm.Labels[names.DrinkLabel] != d.Name {
		problems = append(problems, fmt.Sprintf("lacks the labels %s=%s, %s=%s", names.ManagedByLabel, names.ManagedByValue, names.DrinkLabel, d.Name))
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got, ok := cm.Data[k]; !ok {
			problems = append(problems, fmt.Sprintf("has no key %s (want %q)", k, want[k]))
		} else if got != want[k] {
			problems = append(problems, fmt.Sprintf("has %s=%q, want %q", k, got, want[k]))
		}
	}
	return strings.Join(problems, "; ")
}

// controller is the UID of the object's controller; "" for none.
func controller(obj metav1.Object) types.UID {
	if ref := metav1.GetControllerOf(obj); ref != nil {
		return ref.UID
	}
	return ""
}

// OrphanedConfigMaps finds where this fails: a ConfigMap the operator
// labelled for a Drink goes with it (the garbage collector deletes it
// after its owner).
func OrphanedConfigMaps(s *State) []Finding {
	uids := map[types.UID]bool{}
	for _, d := range s.Drinks {
		uids[d.UID] = true
	}
	var out []Finding
	for _, cm := range s.ConfigMaps {
		if cm.DeletionTimestamp != nil || s.Deleting[cm.Namespace] || cm.Labels[names.ManagedByLabel] != names.ManagedByValue {
			continue
		}
		drink, ok := cm.Labels[names.DrinkLabel]
		if !ok {
			continue
		}
		owner := controller(&cm)
		if owner != "" && uids[owner] {
			continue
		}
		why := fmt.Sprintf("no Drink %s/%s controls it", cm.Namespace, drink)
		if owner == "" {
			why = "it has no controller"
		}
		out = append(out, Finding{Object: "configmap/" + cm.Namespace + "/" + cm.Name,
			Problem: fmt.Sprintf("is labelled %s=%s but %s: an orphan", names.DrinkLabel, drink, why),
			Fix:     fmt.Sprintf("kubectl -n %s delete configmap %s", cm.Namespace, cm.Name)})
	}
	return out
}

// LeaseHolder finds where this fails: the Lease's holder (<pod>_<uuid>) is
// a running manager pod.
func LeaseHolder(s *State) []Finding {
	ns := s.Install.Namespace
	obj := "lease/" + ns + "/" + names.LeaderElectionID
	fix := fmt.Sprintf("kubectl -n %s delete lease %s   # a running replica takes it within seconds", ns, names.LeaderElectionID)
	if s.Lease == nil {
		if s.Install.Found && !leaderElect(s.Install.Args) {
			return nil // leader election is off: every replica reconciles
		}
		return []Finding{{Object: obj, Problem: "is missing: no replica leads", Fix: restart(s)}}
	}
	holder := ""
	if s.Lease.Spec.HolderIdentity != nil {
		holder = *s.Lease.Spec.HolderIdentity
	}
	if holder == "" {
		return []Finding{{Object: obj, Problem: "has no holder: no replica leads", Fix: restart(s)}}
	}
	pod, _, _ := strings.Cut(holder, "_")
	for _, p := range s.Pods {
		if p.Name != pod {
			continue
		}
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			return []Finding{{Object: obj, Problem: fmt.Sprintf("is held by pod %s, which is %s, not running", pod, podState(&p)), Fix: fix}}
		}
		return nil
	}
	return []Finding{{Object: obj, Problem: fmt.Sprintf("is held by %q, which names no pod of the manager in %s", holder, ns), Fix: fix}}
}

// leaderElect reports whether the manager's arguments turn leader
// election on (--leader-elect, or --leader-elect=true).
func leaderElect(args []string) bool {
	on := false
	for _, a := range args {
		switch strings.TrimLeft(a, "-") {
		case "leader-elect", "leader-elect=true":
			on = true
		case "leader-elect=false":
			on = false
		}
	}
	return on
}

func podState(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "terminating"
	}
	if p.Status.Phase == "" {
		return "pending"
	}
	return strings.ToLower(string(p.Status.Phase))
}

// WebhookCA finds where this fails: every webhook's caBundle holds the CA
// of the certificate Secret (ca.crt), the one that signed the certificate
// the webhooks serve.
func WebhookCA(s *State) []Finding {
	ns := s.Install.Namespace
	hooks := s.Webhooks()
	var out []Finding
	if s.Mutating == nil {
		out = append(out, Finding{Object: "mutatingwebhookconfiguration/" + names.MutatingWebhookConfig, Problem: "is missing", Fix: "reinstall the operator (kubectl apply --server-side -f install.yaml)"})
	}
	if s.Validating == nil {
		out = append(out, Finding{Object: "validatingwebhookconfiguration/" + names.ValidatingWebhookConfig, Problem: "is missing", Fix: "reinstall the operator (kubectl apply --server-side -f install.yaml)"})
	}
	if len(hooks) == 0 || s.Install.CertSecret == "" {
		// No Secret of the manager's (--webhook-cert-secret=""): OLM
		// mounts the certificates and keeps the caBundles itself.
		return out
	}
	secret := "secret/" + ns + "/" + s.Install.CertSecret
	if s.CertSecret == nil {
		return append(out, Finding{Object: secret, Problem: "is missing: no CA to check the webhooks' caBundle against", Fix: restart(s) + "   # the manager creates it (cert-manager: kubectl -n " + ns + " describe certificate)"})
	}
	ca, err := certificates(s.CertSecret.Data["ca.crt"])
	if err != nil || len(ca) == 0 {
		return append(out, Finding{Object: secret, Problem: fmt.Sprintf("holds no CA certificate in ca.crt (%v)", err), Fix: restart(s)})
	}
	for _, w := range hooks {
		bundle, _ := certificates(w.CABundle)
		if !slices.ContainsFunc(bundle, func(c *x509.Certificate) bool { return bytes.Equal(c.Raw, ca[0].Raw) }) {
			out = append(out, Finding{Object: w.Name,
				Problem: fmt.Sprintf("caBundle does not hold the current CA %q of %s (ca.crt): the API server cannot verify the webhook", ca[0].Subject.CommonName, secret),
				Fix:     restart(s) + "   # the manager injects the CA at start (cert-manager: its cainjector)"})
		}
	}
	return out
}

// certificates parses the PEM certificates of data.
func certificates(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return out, nil
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
}

// WebhookEndpoints finds where this fails: the Service each webhook calls
// has a ready endpoint, else the API server has nowhere to send the call.
// A webhook called by URL (make run, tests) has no Service to check.
func WebhookEndpoints(s *State) []Finding {
	var out []Finding
	users := map[string][]string{}
	for _, w := range s.Webhooks() {
		if w.Service != nil {
			key := w.Service.Namespace + "/" + w.Service.Name
			users[key] = append(users[key], w.Name)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(users)) {
		ns, name, _ := strings.Cut(key, "/")
		obj := "service/" + key
		if s.Services[key] == nil {
			out = append(out, Finding{Object: obj, Problem: fmt.Sprintf("is missing; %s call it", strings.Join(users[key], ", ")),
				Fix: "reinstall the operator (kubectl apply --server-side -f install.yaml)"})
			continue
		}
		if !hasReadyEndpoint(s, key) {
			out = append(out, Finding{Object: obj, Problem: fmt.Sprintf("has no ready endpoint; %s call it", strings.Join(users[key], ", ")),
				Fix: restart(s) + fmt.Sprintf("   # then kubectl -n %s get pods,endpointslices -l kubernetes.io/service-name=%s", ns, name)})
		}
	}
	return out
}

func hasReadyEndpoint(s *State, key string) bool {
	for _, es := range s.EndpointSlices[key] {
		for _, e := range es.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				return true
			}
		}
	}
	return false
}

// StoredVersions finds where this fails: a CRD's status.storedVersions is
// its storage version alone, so that an older version can be dropped from
// it.
func StoredVersions(s *State) []Finding {
	var out []Finding
	for _, name := range CRDs {
		crd := s.CRDs[name]
		if crd == nil {
			out = append(out, Finding{Object: "crd/" + name, Problem: "is missing", Fix: "reinstall the operator (kubectl apply --server-side -f install.yaml)"})
			continue
		}
		storage := ""
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				storage = v.Name
			}
		}
		if got := crd.Status.StoredVersions; len(got) == 1 && got[0] == storage {
			continue
		}
		fix := restart(s) + "   # the manager migrates every Drink to " + storage + " and trims storedVersions at start"
		if name != names.DrinkCRD {
			fix = fmt.Sprintf(`kubectl patch crd %s --subresource=status --type=merge -p '{"status":{"storedVersions":["%s"]}}'   # once every object is stored in %s`, name, storage, storage)
		}
		out = append(out, Finding{Object: "crd/" + name,
			Problem: fmt.Sprintf("status.storedVersions is [%s], want [%s]", strings.Join(crd.Status.StoredVersions, " "), storage),
			Fix:     fix})
	}
	return out
}

// AcceptedConfig finds where this fails: the record of the last accepted
// configuration (the ConfigMap myoperator-accepted-config) says what the
// OperatorConfig's status.effective says: the operator runs with what it
// reports.
func AcceptedConfig(s *State) []Finding {
	ns := s.Install.Namespace
	oc := "operatorconfig/" + operatorv1alpha1.SingletonName
	rec := "configmap/" + ns + "/" + opconfig.RecordName
	switch {
	case s.OperatorConfig == nil:
		return []Finding{{Object: oc, Problem: "is missing: the operator runs on its last accepted configuration", Fix: restart(s) + "   # the bootstrap creates it with the defaults"}}
	case s.OperatorConfig.Status.Effective == nil:
		return []Finding{{Object: oc, Problem: "has no status.effective: the operator has not reconciled it", Fix: restart(s)}}
	case s.RecordErr != nil:
		return []Finding{{Object: rec, Problem: s.RecordErr.Error(), Fix: restart(s) + "   # the operator writes the record again"}}
	case s.Record == nil:
		return []Finding{{Object: rec, Problem: "is missing: no configuration was accepted", Fix: restart(s)}}
	}
	got, want := values(s.Record.Effective), values(*s.OperatorConfig.Status.Effective)
	if got == want {
		return nil
	}
	return []Finding{{Object: rec, Problem: fmt.Sprintf("records %s, but %s's status.effective is %s", got, oc, want),
		Fix: restart(s) + "   # the operator resolves the OperatorConfig again and rewrites both"}}
}

// values are the settings of an effective configuration (not where each
// came from), as text.
func values(e operatorv1alpha1.EffectiveConfig) string {
	return fmt.Sprintf("{managementState: %s, logLevel: %s, drinkDefaultSize: %s, guestbookNamespace: %s, guestbookImage: %s}",
		e.ManagementState, e.LogLevel, e.DrinkDefaultSize, e.GuestbookNamespace, e.GuestbookImage)
}

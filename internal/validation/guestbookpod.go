package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	webappv1 "github.com/example/myoperator/apis/webapp/v1"
)

// The values the Kubernetes API accepts for what spec.pod passes to the
// pod template. The API server checks the pod template only when the
// operator writes the StatefulSet, where a user never sees the error: so
// the webhook checks them on the Guestbook, by the same rules.
var (
	tolerationOperators   = []string{string(corev1.TolerationOpExists), string(corev1.TolerationOpEqual)}
	taintEffects          = []string{string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute)}
	nodeSelectorOperators = []string{string(corev1.NodeSelectorOpIn), string(corev1.NodeSelectorOpNotIn), string(corev1.NodeSelectorOpExists),
		string(corev1.NodeSelectorOpDoesNotExist), string(corev1.NodeSelectorOpGt), string(corev1.NodeSelectorOpLt)}
)

// validateGuestbookPod checks spec.pod beyond its schema.
func validateGuestbookPod(g *webappv1.Guestbook) field.ErrorList {
	p := g.Spec.Pod
	if p == nil {
		return nil
	}
	path := field.NewPath("spec", "pod")
	var errs field.ErrorList
	errs = append(errs, checkResources(p.Resources, path.Child("resources"))...)
	errs = append(errs, metav1validation.ValidateLabels(p.NodeSelector, path.Child("nodeSelector"))...)
	errs = append(errs, checkTolerations(p.Tolerations, path.Child("tolerations"))...)
	errs = append(errs, checkAffinity(p.Affinity, path.Child("affinity"))...)
	errs = append(errs, checkOwnPodsTogether(g, path.Child("affinity"))...)
	if p.PriorityClassName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(p.PriorityClassName, false) {
			errs = append(errs, field.Invalid(path.Child("priorityClassName"), p.PriorityClassName, "must name a PriorityClass: "+msg))
		}
	}
	errs = append(errs, checkPullSecrets(p.ImagePullSecrets, path.Child("imagePullSecrets"))...)
	return errs
}

// checkResources: resource names as Kubernetes spells them, a bounded
// number of each, no claim (the pod has no resourceClaims to refer to),
// no negative quantity and no request above its limit.
func checkResources(r *corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if len(r.Claims) > 0 {
		errs = append(errs, field.Forbidden(path.Child("claims"), "resource claims are not supported: the Guestbook's pods have no resourceClaims to refer to"))
	}
	for _, list := range []struct {
		name string
		rl   corev1.ResourceList
	}{{"requests", r.Requests}, {"limits", r.Limits}} {
		p := path.Child(list.name)
		if len(list.rl) > webappv1.MaxResources {
			errs = append(errs, field.TooMany(p, len(list.rl), webappv1.MaxResources))
		}
		for name, q := range list.rl {
			for _, msg := range utilvalidation.IsQualifiedName(string(name)) {
				errs = append(errs, field.Invalid(p.Key(string(name)), string(name), "must be a resource name: "+msg))
			}
			if q.Sign() < 0 {
				errs = append(errs, field.Invalid(p.Key(string(name)), q.String(), "must be greater than or equal to 0"))
			}
		}
	}
	for name, req := range r.Requests {
		if lim, ok := r.Limits[name]; ok && req.Cmp(lim) > 0 {
			errs = append(errs, field.Invalid(path.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be less than or equal to the %s limit of %s", name, lim.String())))
		}
	}
	return errs
}

// checkTolerations applies the pod's rules for tolerations.
func checkTolerations(ts []corev1.Toleration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range ts {
		p := path.Index(i)
		if t.Key != "" {
			for _, msg := range utilvalidation.IsQualifiedName(t.Key) {
				errs = append(errs, field.Invalid(p.Child("key"), t.Key, "must be a taint key: "+msg))
			}
		}
		switch t.Operator {
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(p.Child("value"), t.Value, "must be empty when operator is Exists"))
			}
		case corev1.TolerationOpEqual, "":
			if t.Key == "" {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Operator, "must be Exists when key is empty: an empty key matches every taint"))
			}
			for _, msg := range utilvalidation.IsValidLabelValue(t.Value) {
				errs = append(errs, field.Invalid(p.Child("value"), t.Value, msg))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, tolerationOperators))
		}
		if t.Effect != "" && !sets.New(taintEffects...).Has(string(t.Effect)) {
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, taintEffects))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(p.Child("effect"), t.Effect, "must be NoExecute when tolerationSeconds is set"))
		}
	}
	return errs
}

// checkPullSecrets: Secret names, each once (the pod's list is keyed by
// name).
func checkPullSecrets(refs []corev1.LocalObjectReference, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, r := range refs {
		for _, msg := range apivalidation.NameIsDNSSubdomain(r.Name, false) {
			errs = append(errs, field.Invalid(path.Index(i).Child("name"), r.Name, "must name a Secret: "+msg))
		}
		if seen.Has(r.Name) {
			errs = append(errs, field.Duplicate(path.Index(i).Child("name"), r.Name))
		}
		seen.Insert(r.Name)
	}
	return errs
}

// checkAffinity applies the pod's rules for affinity, and bounds each of
// its lists: the schema of these Kubernetes types carries none.
func checkAffinity(a *corev1.Affinity, path *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		p := path.Child("nodeAffinity")
		if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
			rp := p.Child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
			if len(req.NodeSelectorTerms) == 0 {
				errs = append(errs, field.Required(rp, "must have at least one node selector term"))
			}
			errs = append(errs, tooMany(rp, len(req.NodeSelectorTerms), webappv1.MaxAffinityTerms)...)
			for i, term := range req.NodeSelectorTerms {
				errs = append(errs, checkNodeSelectorTerm(term, rp.Index(i))...)
			}
		}
		pp := p.Child("preferredDuringSchedulingIgnoredDuringExecution")
		errs = append(errs, tooMany(pp, len(na.PreferredDuringSchedulingIgnoredDuringExecution), webappv1.MaxAffinityTerms)...)
		for i, w := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			errs = append(errs, checkWeight(w.Weight, pp.Index(i).Child("weight"))...)
			errs = append(errs, checkNodeSelectorTerm(w.Preference, pp.Index(i).Child("preference"))...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		errs = append(errs, checkPodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution,
			pa.PreferredDuringSchedulingIgnoredDuringExecution, path.Child("podAffinity"))...)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		errs = append(errs, checkPodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution,
			pa.PreferredDuringSchedulingIgnoredDuringExecution, path.Child("podAntiAffinity"))...)
	}
	return errs
}

func checkNodeSelectorTerm(term corev1.NodeSelectorTerm, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, l := range []struct {
		name string
		reqs []corev1.NodeSelectorRequirement
	}{{"matchExpressions", term.MatchExpressions}, {"matchFields", term.MatchFields}} {
		p := path.Child(l.name)
		errs = append(errs, tooMany(p, len(l.reqs), webappv1.MaxSelectorRequirements)...)
		for i, r := range l.reqs {
			errs = append(errs, checkNodeSelectorRequirement(r, p.Index(i))...)
		}
	}
	return errs
}

// checkNodeSelectorRequirement: a label key, a known operator, and the
// number of values the operator takes.
func checkNodeSelectorRequirement(r corev1.NodeSelectorRequirement, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range utilvalidation.IsQualifiedName(r.Key) {
		errs = append(errs, field.Invalid(path.Child("key"), r.Key, msg))
	}
	vp := path.Child("values")
	switch r.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(r.Values) == 0 {
			errs = append(errs, field.Required(vp, "must be specified when operator is In or NotIn"))
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(r.Values) > 0 {
			errs = append(errs, field.Forbidden(vp, "may not be specified when operator is Exists or DoesNotExist"))
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(r.Values) != 1 {
			errs = append(errs, field.Required(vp, "must be specified as one integer when operator is Gt or Lt"))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("operator"), r.Operator, nodeSelectorOperators))
	}
	errs = append(errs, tooMany(vp, len(r.Values), webappv1.MaxSelectorValues)...)
	for i, v := range r.Values {
		for _, msg := range utilvalidation.IsValidLabelValue(v) {
			errs = append(errs, field.Invalid(vp.Index(i), v, msg))
		}
	}
	return errs
}

func checkPodAffinityTerms(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	rp := path.Child("requiredDuringSchedulingIgnoredDuringExecution")
	errs = append(errs, tooMany(rp, len(required), webappv1.MaxAffinityTerms)...)
	for i, t := range required {
		errs = append(errs, checkPodAffinityTerm(t, rp.Index(i))...)
	}
	pp := path.Child("preferredDuringSchedulingIgnoredDuringExecution")
	errs = append(errs, tooMany(pp, len(preferred), webappv1.MaxAffinityTerms)...)
	for i, w := range preferred {
		errs = append(errs, checkWeight(w.Weight, pp.Index(i).Child("weight"))...)
		errs = append(errs, checkPodAffinityTerm(w.PodAffinityTerm, pp.Index(i).Child("podAffinityTerm"))...)
	}
	return errs
}

// checkPodAffinityTerm: label selectors by Kubernetes' own rules, a
// topology key, and bounds.
func checkPodAffinityTerm(t corev1.PodAffinityTerm, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	opts := metav1validation.LabelSelectorValidationOptions{}
	for _, s := range []struct {
		name string
		sel  *metav1.LabelSelector
	}{{"labelSelector", t.LabelSelector}, {"namespaceSelector", t.NamespaceSelector}} {
		if s.sel == nil {
			continue
		}
		p := path.Child(s.name)
		errs = append(errs, metav1validation.ValidateLabelSelector(s.sel, opts, p)...)
		errs = append(errs, tooMany(p.Child("matchLabels"), len(s.sel.MatchLabels), webappv1.MaxSelectorRequirements)...)
		errs = append(errs, tooMany(p.Child("matchExpressions"), len(s.sel.MatchExpressions), webappv1.MaxSelectorRequirements)...)
		for i, r := range s.sel.MatchExpressions {
			errs = append(errs, tooMany(p.Child("matchExpressions").Index(i).Child("values"), len(r.Values), webappv1.MaxSelectorValues)...)
		}
	}
	errs = append(errs, tooMany(path.Child("namespaces"), len(t.Namespaces), webappv1.MaxSelectorValues)...)
	for i, ns := range t.Namespaces {
		for _, msg := range apivalidation.NameIsDNSLabel(ns, false) {
			errs = append(errs, field.Invalid(path.Child("namespaces").Index(i), ns, msg))
		}
	}
	for _, l := range []struct {
		name string
		keys []string
	}{{"matchLabelKeys", t.MatchLabelKeys}, {"mismatchLabelKeys", t.MismatchLabelKeys}} {
		errs = append(errs, tooMany(path.Child(l.name), len(l.keys), webappv1.MaxSelectorRequirements)...)
		for i, k := range l.keys {
			for _, msg := range utilvalidation.IsQualifiedName(k) {
				errs = append(errs, field.Invalid(path.Child(l.name).Index(i), k, msg))
			}
		}
	}
	if t.TopologyKey == "" {
		errs = append(errs, field.Required(path.Child("topologyKey"), "must name a node label, such as kubernetes.io/hostname"))
	}
	for _, msg := range utilvalidation.IsQualifiedName(t.TopologyKey) {
		if t.TopologyKey != "" {
			errs = append(errs, field.Invalid(path.Child("topologyKey"), t.TopologyKey, msg))
		}
	}
	return errs
}

func checkWeight(w int32, path *field.Path) field.ErrorList {
	if w < 1 || w > 100 {
		return field.ErrorList{field.Invalid(path, w, "must be in the range 1-100")}
	}
	return nil
}

func tooMany(path *field.Path, n, limit int) field.ErrorList {
	if n > limit {
		return field.ErrorList{field.TooMany(path, n, limit)}
	}
	return nil
}

// checkOwnPodsTogether refuses what no scheduler can satisfy: with
// antiAffinity Hard and more than one pod, a required podAffinity term
// that puts the Guestbook's own pods on the same node. The first pod would
// run; every other one would need the node it is kept off.
func checkOwnPodsTogether(g *webappv1.Guestbook, path *field.Path) field.ErrorList {
	p := g.Spec.Pod
	if p.AntiAffinity != webappv1.AntiAffinityHard || g.Spec.Size < 2 || p.Affinity == nil || p.Affinity.PodAffinity == nil {
		return nil
	}
	own := labels.Set(webappv1.PodSelector(g.Name))
	var errs field.ErrorList
	for i, t := range p.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if t.TopologyKey != webappv1.HostnameTopologyKey || t.LabelSelector == nil || t.NamespaceSelector != nil || len(t.Namespaces) > 0 {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
		if err != nil || !sel.Matches(own) {
			continue
		}
		errs = append(errs, field.Invalid(path.Child("podAffinity", "requiredDuringSchedulingIgnoredDuringExecution").Index(i), t.LabelSelector.String(),
			fmt.Sprintf("requires the Guestbook's own pods on one node (topologyKey %s), which antiAffinity Hard forbids for a size of %d: no node could take the second pod; use antiAffinity Soft or drop this term",
				webappv1.HostnameTopologyKey, g.Spec.Size)))
	}
	return errs
}

package reconcile

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	webappv1 "github.com/example/myoperator/apis/webapp/v1"
)

// DefaultGuestbookResources are the guestbook container's requests and
// limits when spec.pod.resources is omitted: what the Guestbook server
// needs idle, and a memory limit that stops a leak before it hurts the
// node (docs/api.md states them).
func DefaultGuestbookResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
}

// antiAffinityWeight is the weight of the Soft anti-affinity term: the
// highest, so that spreading the Guestbook's pods outweighs the
// scheduler's other preferences.
const antiAffinityWeight = 100

// podResources is the container's resources: spec.pod.resources as a
// whole when set, the defaults otherwise; nil when that asks for nothing,
// so that the apply leaves resources out rather than write an empty one.
func podResources(p *webappv1.GuestbookPod) *corev1ac.ResourceRequirementsApplyConfiguration {
	r := DefaultGuestbookResources()
	if p != nil && p.Resources != nil {
		r = *p.Resources
	}
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return nil
	}
	out := corev1ac.ResourceRequirements()
	if len(r.Requests) > 0 {
		out.WithRequests(r.Requests)
	}
	if len(r.Limits) > 0 {
		out.WithLimits(r.Limits)
	}
	return out
}

// podAffinity is spec.pod.affinity merged with the operator's pod
// anti-affinity: the operator's term (the Guestbook's own pods, one per
// node) comes first in the list antiAffinity selects, the user's terms
// follow; nodeAffinity and podAffinity are the user's as written.
func podAffinity(g *webappv1.Guestbook) *corev1ac.AffinityApplyConfiguration {
	a := &corev1.Affinity{}
	if g.Spec.Pod != nil && g.Spec.Pod.Affinity != nil {
		a = g.Spec.Pod.Affinity.DeepCopy()
	}
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	own := corev1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: webappv1.PodSelector(g.Name)},
		TopologyKey:   webappv1.HostnameTopologyKey,
	}
	anti := a.PodAntiAffinity
	if g.Spec.Pod != nil && g.Spec.Pod.AntiAffinity == webappv1.AntiAffinityHard {
		anti.RequiredDuringSchedulingIgnoredDuringExecution = append([]corev1.PodAffinityTerm{own},
			anti.RequiredDuringSchedulingIgnoredDuringExecution...)
	} else {
		anti.PreferredDuringSchedulingIgnoredDuringExecution = append([]corev1.WeightedPodAffinityTerm{
			{Weight: antiAffinityWeight, PodAffinityTerm: own}}, anti.PreferredDuringSchedulingIgnoredDuringExecution...)
	}
	out := &corev1ac.AffinityApplyConfiguration{}
	mustConvert(a, out)
	return out
}

// applyPodSettings sets on the pod spec what spec.pod asks for besides
// resources and affinity. Fields left out of spec.pod are left out of the
// apply, so that removing one from the Guestbook removes it from the pods.
func applyPodSettings(spec *corev1ac.PodSpecApplyConfiguration, p *webappv1.GuestbookPod) {
	if p == nil {
		return
	}
	if len(p.NodeSelector) > 0 {
		spec.WithNodeSelector(p.NodeSelector)
	}
	for i := range p.Tolerations {
		t := &corev1ac.TolerationApplyConfiguration{}
		mustConvert(&p.Tolerations[i], t)
		spec.WithTolerations(t)
	}
	if p.PriorityClassName != "" {
		spec.WithPriorityClassName(p.PriorityClassName)
	}
	for _, s := range p.ImagePullSecrets {
		spec.WithImagePullSecrets(corev1ac.LocalObjectReference().WithName(s.Name))
	}
}

// mustConvert copies a Kubernetes type into its apply configuration, which
// has the same JSON form. It cannot fail for these pairs of types; a panic
// says a programming error.
func mustConvert(from, to any) {
	raw, err := json.Marshal(from)
	if err == nil {
		err = json.Unmarshal(raw, to)
	}
	if err != nil {
		panic(fmt.Sprintf("converting %T to %T: %v", from, to, err))
	}
}

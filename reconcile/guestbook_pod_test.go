package reconcile_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/test/framework/testenv"
)

// podSettings is what the tests compare of the StatefulSet's pod template:
// the fields spec.pod sets.
type podSettings struct {
	Resources         corev1.ResourceRequirements
	NodeSelector      map[string]string
	Tolerations       []corev1.Toleration
	Affinity          *corev1.Affinity
	PriorityClassName string
	ImagePullSecrets  []corev1.LocalObjectReference
	// EnableServiceLinks is the operator's own, false whatever spec.pod
	// says.
	EnableServiceLinks *bool
}

func settingsOf(sts *appsv1.StatefulSet) podSettings {
	s := sts.Spec.Template.Spec
	return podSettings{Resources: s.Containers[0].Resources, NodeSelector: s.NodeSelector, Tolerations: s.Tolerations,
		Affinity: s.Affinity, PriorityClassName: s.PriorityClassName, ImagePullSecrets: s.ImagePullSecrets,
		EnableServiceLinks: s.EnableServiceLinks}
}

// templateHas returns "" once the pod template of the StatefulSet key
// holds exactly want in the fields spec.pod sets.
func templateHas(key client.ObjectKey, want podSettings) func() string {
	return func() string {
		sts := &appsv1.StatefulSet{}
		if err := k8s.Get(testCtx, key, sts); err != nil {
			return err.Error()
		}
		if diff := cmp.Diff(want, settingsOf(sts), cmpopts.EquateEmpty()); diff != "" {
			return "pod template (-want +got):\n" + diff
		}
		return ""
	}
}

// ownTerm is the anti-affinity term that keeps the Guestbook's own pods
// apart, written out here rather than taken from the operator.
func ownTerm(name string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{"app.kubernetes.io/name": "guestbook", "app.kubernetes.io/instance": name}}}
}

// TestGuestbookPodSettings: spec.pod reaches the StatefulSet's pod
// template; without it the pods get the default resources and the Soft
// anti-affinity; another writer's change to any of these template fields
// is reverted with an event naming it; a change of spec.pod changes the
// template, and removing spec.pod restores the defaults and drops the rest.
func TestGuestbookPodSettings(t *testing.T) {
	const name = "podset"
	g := &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: webappv1.GuestbookSpec{Size: 2, ConfigMapName: "podset-cm"}}
	if err := k8s.Create(testCtx, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(testCtx, g) })
	key := client.ObjectKey{Namespace: operandNS, Name: name}
	q := resource.MustParse

	defaults := podSettings{
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("10m"), corev1.ResourceMemory: q("16Mi")},
			Limits: corev1.ResourceList{corev1.ResourceMemory: q("64Mi")}},
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: ownTerm(name)}}}},
		EnableServiceLinks: ptr.To(false),
	}
	userAnti := corev1.PodAffinityTerm{TopologyKey: "topology.kubernetes.io/zone",
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}
	nodeAffinity := &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}}}}}}
	pod := &webappv1.GuestbookPod{
		Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("0.1"), corev1.ResourceMemory: q("32Mi")},
			Limits: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("128Mi")}},
		NodeSelector: map[string]string{"disktype": "ssd"},
		Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule},
			{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)}},
		Affinity: &corev1.Affinity{NodeAffinity: nodeAffinity,
			PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{userAnti}}},
		AntiAffinity:      webappv1.AntiAffinityHard,
		PriorityClassName: "gb-high",
		ImagePullSecrets:  []corev1.LocalObjectReference{{Name: "regcred"}},
	}
	// What pod gives the template: the operator's Hard term first, then the
	// user's; the cpu request as the API server writes 0.1.
	custom := podSettings{
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("100m"), corev1.ResourceMemory: q("32Mi")},
			Limits: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("128Mi")}},
		NodeSelector: pod.NodeSelector, Tolerations: pod.Tolerations, PriorityClassName: "gb-high", ImagePullSecrets: pod.ImagePullSecrets,
		Affinity: &corev1.Affinity{NodeAffinity: nodeAffinity, PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{ownTerm(name), userAnti}}},
		EnableServiceLinks: ptr.To(false),
	}
	templateIs := func(want podSettings) func() string { return templateHas(key, want) }
	setPod := func(p *webappv1.GuestbookPod) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8s.Get(testCtx, client.ObjectKeyFromObject(g), g); err != nil {
				return err
			}
			g.Spec.Pod = p
			return k8s.Update(testCtx, g)
		}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("defaults without spec.pod", func(t *testing.T) { testenv.Eventually(t, 10*time.Second, templateIs(defaults)) })
	setPod(pod)
	t.Run("spec.pod set", func(t *testing.T) { testenv.Eventually(t, 10*time.Second, templateIs(custom)) })

	edits := []struct {
		name, field string
		edit        func(*corev1.PodSpec)
	}{
		{"resources", "spec.template.spec.containers[0].resources", func(s *corev1.PodSpec) {
			s.Containers[0].Resources.Limits[corev1.ResourceMemory] = q("1Gi")
		}},
		{"nodeSelector", "spec.template.spec.nodeSelector", func(s *corev1.PodSpec) { s.NodeSelector["disktype"] = "hdd" }},
		{"tolerations", "spec.template.spec.tolerations", func(s *corev1.PodSpec) { s.Tolerations = s.Tolerations[:1] }},
		{"affinity: the operator's anti-affinity term removed", "spec.template.spec.affinity.podAntiAffinity", func(s *corev1.PodSpec) {
			s.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = s.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[1:]
		}},
		{"affinity: node affinity removed", "spec.template.spec.affinity.nodeAffinity", func(s *corev1.PodSpec) { s.Affinity.NodeAffinity = nil }},
		{"priorityClassName", "spec.template.spec.priorityClassName", func(s *corev1.PodSpec) { s.PriorityClassName = "other" }},
		{"imagePullSecrets", "spec.template.spec.imagePullSecrets", func(s *corev1.PodSpec) { s.ImagePullSecrets = nil }},
	}
	for _, tc := range edits {
		t.Run("another writer edits "+tc.name, func(t *testing.T) {
			start := time.Now().Truncate(time.Second)
			if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				sts := &appsv1.StatefulSet{}
				if err := k8s.Get(testCtx, key, sts); err != nil {
					return err
				}
				tc.edit(&sts.Spec.Template.Spec)
				return k8s.Update(testCtx, sts, client.FieldOwner("kubectl-edit"))
			}); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, 10*time.Second, templateIs(custom))
			testenv.Eventually(t, 10*time.Second, func() string {
				for _, e := range eventsAbout(t, "Guestbook", name) {
					if e.Reason == "StatefulSetCorrected" && strings.Contains(e.Note, tc.field) && !eventTime(e).Before(start) {
						return ""
					}
				}
				return fmt.Sprintf("no StatefulSetCorrected event naming %s since %s", tc.field, start)
			})
		})
	}

	t.Run("spec.pod changed: Soft, no node selector, default resources", func(t *testing.T) {
		changed := pod.DeepCopy()
		changed.AntiAffinity, changed.NodeSelector, changed.Resources = webappv1.AntiAffinitySoft, nil, nil
		setPod(changed)
		want := custom
		want.Resources, want.NodeSelector = defaults.Resources, nil
		want.Affinity = &corev1.Affinity{NodeAffinity: nodeAffinity, PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: ownTerm(name)}},
			RequiredDuringSchedulingIgnoredDuringExecution:  []corev1.PodAffinityTerm{userAnti}}}
		testenv.Eventually(t, 10*time.Second, templateIs(want))
	})
	t.Run("spec.pod removed: the defaults again", func(t *testing.T) {
		setPod(nil)
		testenv.Eventually(t, 10*time.Second, templateIs(defaults))
	})
	// The default memory limit, written by the StatefulSet's create, goes:
	// left there, it would be below the request and the apply refused.
	t.Run("resources without limits above the default limit", func(t *testing.T) {
		big := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: q("128Mi")}}
		setPod(&webappv1.GuestbookPod{Resources: &big})
		want := defaults
		want.Resources = big
		testenv.Eventually(t, 10*time.Second, templateIs(want))
	})
	t.Run("resources {} ask for nothing", func(t *testing.T) {
		setPod(&webappv1.GuestbookPod{Resources: &corev1.ResourceRequirements{}})
		want := defaults
		want.Resources = corev1.ResourceRequirements{}
		testenv.Eventually(t, 10*time.Second, templateIs(want))
	})
}

// TestGuestbookPodSettingsFromCreate: what spec.pod held when the
// Guestbook was created goes from the pod template when spec.pod is
// removed, as what a later update set does.
func TestGuestbookPodSettingsFromCreate(t *testing.T) {
	const name = "podcreate"
	q := resource.MustParse
	g := &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: webappv1.GuestbookSpec{Size: 1, ConfigMapName: "podcreate-cm", Pod: &webappv1.GuestbookPod{
			Resources:         &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("50m")}},
			NodeSelector:      map[string]string{"disktype": "ssd"},
			Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
			AntiAffinity:      webappv1.AntiAffinityHard,
			PriorityClassName: "gb-high",
			ImagePullSecrets:  []corev1.LocalObjectReference{{Name: "regcred"}},
		}}}
	if err := k8s.Create(testCtx, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(testCtx, g) })
	key := client.ObjectKey{Namespace: operandNS, Name: name}
	templateIs := func(want podSettings) func() string { return templateHas(key, want) }
	testenv.Eventually(t, 10*time.Second, templateIs(podSettings{
		Resources: *g.Spec.Pod.Resources, NodeSelector: g.Spec.Pod.NodeSelector, Tolerations: g.Spec.Pod.Tolerations,
		PriorityClassName: "gb-high", ImagePullSecrets: g.Spec.Pod.ImagePullSecrets,
		Affinity:           &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{ownTerm(name)}}},
		EnableServiceLinks: ptr.To(false),
	}))
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(g), g); err != nil {
			return err
		}
		g.Spec.Pod = nil
		return k8s.Update(testCtx, g)
	}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, templateIs(podSettings{
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("10m"), corev1.ResourceMemory: q("16Mi")},
			Limits: corev1.ResourceList{corev1.ResourceMemory: q("64Mi")}},
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: ownTerm(name)}}}},
		EnableServiceLinks: ptr.To(false),
	}))
}

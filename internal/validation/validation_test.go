package validation_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/internal/pause"
	"github.com/example/myoperator/internal/validation"
)

func TestValidateDrink(t *testing.T) {
	drink := func(name string, size drinksv1.Size, extras ...string) *drinksv1.Drink {
		return &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: drinksv1.DrinkSpec{DisplayName: "x", Beverage: "tea", Size: size, Extras: extras}}
	}
	forged := drink("forged", drinksv1.SizeLarge)
	forged.Annotations = map[string]string{drinksv1.AuthoredVersionAnnotation: "v2"}
	annotated := func(value string) *drinksv1.Drink {
		d := drink("paused", drinksv1.SizeLarge)
		d.Annotations = map[string]string{pause.Annotation: value}
		return d
	}
	tests := []struct {
		name string
		d    *drinksv1.Drink
		want string // substring of the error; empty means valid
	}{
		{"valid", drink("tea", drinksv1.SizeSmall, "a", "b", "c"), ""},
		{"name of 63 characters", drink(strings.Repeat("a", 63), drinksv1.SizeLarge), ""},
		{"name of 64 characters", drink(strings.Repeat("a", 64), drinksv1.SizeLarge), "metadata.name: Too long"},
		{"small with 4 extras", drink("s", drinksv1.SizeSmall, "a", "b", "c", "d"), "spec.extras: Too many"},
		{"medium with 4 extras", drink("m", drinksv1.SizeMedium, "a", "b", "c", "d"), ""},
		{"forged authored version", forged, `metadata.annotations[example.com/authored-version]: Unsupported value: "v2"`},
		{"paused", annotated("true"), ""},
		{"resumed", annotated("false"), ""},
		{"pause misspelt", annotated("True"), `metadata.annotations[example.com/paused]: Unsupported value: "True": supported values: "true", "false"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check(t, validation.ValidateDrink(tc.d).ToAggregate(), tc.want)
		})
	}
}

func TestValidateGuestbook(t *testing.T) {
	gb := func(name, cm string) *webappv1.Guestbook {
		return &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: webappv1.GuestbookSpec{Size: 1, ConfigMapName: cm}}
	}
	others := []webappv1.Guestbook{*gb("first", "first-cm")}
	pausedGB := func(value string) *webappv1.Guestbook {
		g := gb("paused", "paused")
		g.Annotations = map[string]string{pause.Annotation: value}
		return g
	}
	tests := []struct {
		name string
		g    *webappv1.Guestbook
		want string
	}{
		{"valid", gb("second", "second-cm"), ""},
		{"same object re-validated", gb("first", "first-cm"), ""},
		{"ConfigMap taken", gb("second", "first-cm"), `ConfigMap "first-cm" is already used by Guestbook "first"`},
		{"dotted name", gb("a.b", "ab"), "metadata.name: Invalid value"},
		{"name of 53 characters", gb(strings.Repeat("g", 53), "g"), "may not be more than 52"},
		{"paused", pausedGB("true"), ""},
		{"pause misspelt", pausedGB("yes"), `metadata.annotations[example.com/paused]: Unsupported value: "yes"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check(t, validation.ValidateGuestbook(tc.g, others).ToAggregate(), tc.want)
		})
	}
	if err := validation.ValidateGuestbookUpdate(gb("a", "one"), gb("a", "two")).ToAggregate(); err == nil ||
		!strings.Contains(err.Error(), "spec.configMapName: Forbidden") {
		t.Errorf("configMapName change: %v", err)
	}
}

// TestValidateGuestbookPod: the rules of spec.pod that depend on the rest
// of the Guestbook; internal/webhook's TestGuestbookPodRejected sends
// every rule through the API server.
func TestValidateGuestbookPod(t *testing.T) {
	together := &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "guestbook"}}}}}}
	gb := func(size int32, anti webappv1.AntiAffinity, a *corev1.Affinity) *webappv1.Guestbook {
		return &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: "gb"},
			Spec: webappv1.GuestbookSpec{Size: size, ConfigMapName: "gb", Pod: &webappv1.GuestbookPod{AntiAffinity: anti, Affinity: a}}}
	}
	tests := []struct {
		name string
		g    *webappv1.Guestbook
		want string
	}{
		{"own pods together, Soft", gb(3, webappv1.AntiAffinitySoft, together), ""},
		{"own pods together, Hard, size 1", gb(1, webappv1.AntiAffinityHard, together), ""},
		{"own pods together, Hard, size 3", gb(3, webappv1.AntiAffinityHard, together),
			"spec.pod.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]: Invalid value"},
		{"another app's pods, Hard", gb(3, webappv1.AntiAffinityHard, &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname",
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cache"}}}}}}), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check(t, validation.ValidateGuestbook(tc.g, nil).ToAggregate(), tc.want)
		})
	}
}

func TestValidateOperatorConfig(t *testing.T) {
	cfg := func(name, ns, image string) *operatorv1alpha1.OperatorConfig {
		c := &operatorv1alpha1.OperatorConfig{ObjectMeta: metav1.ObjectMeta{Name: name}}
		c.Spec.Guestbook.Namespace, c.Spec.Guestbook.Image = ns, image
		return c
	}
	tests := []struct {
		name string
		c    *operatorv1alpha1.OperatorConfig
		want string
	}{
		{"valid", cfg("cluster", "guestbook", "ghcr.io/example/myoperator-guestbook:v1.0.0"), ""},
		{"omitted fields", cfg("cluster", "", ""), ""},
		{"image by digest", cfg("cluster", "gb", "app@sha256:"+strings.Repeat("a", 64)), ""},
		{"image with registry port", cfg("cluster", "gb", "localhost:5000/team/app:v1"), ""},
		{"not named cluster", cfg("other", "gb", ""), "the only accepted name is 'cluster'"},
		{"kube-system", cfg("cluster", "kube-system", ""), "spec.guestbook.namespace: Forbidden"},
		{"operator namespace", cfg("cluster", "myoperator-system", ""), "the operator's own namespace"},
		{"image with empty tag", cfg("cluster", "gb", "nginx:"), "spec.guestbook.image: Invalid value"},
		{"image with upper case path", cfg("cluster", "gb", "Team/App"), "spec.guestbook.image: Invalid value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check(t, validation.ValidateOperatorConfig(tc.c, "myoperator-system").ToAggregate(), tc.want)
		})
	}
}

func check(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("want valid, got %v", err)
	case want != "" && err == nil:
		t.Errorf("want an error with %q, got none", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("error %q does not contain %q", err, want)
	}
}

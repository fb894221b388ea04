package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RunStatefulSetPods plays the StatefulSet controller and the kubelet,
// which envtest lacks: it waits for the StatefulSet ns/name, creates its
// pods from the template with their stable names, controlled by it, and
// marks them Running and Ready. It returns the pods' names.
func RunStatefulSetPods(ctx context.Context, t testing.TB, c client.Client, ns, name string) []string {
	t.Helper()
	sts := &appsv1.StatefulSet{}
	Eventually(t, 10*time.Second, func() string {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sts); err != nil {
			return "StatefulSet: " + err.Error()
		}
		return ""
	})
	var names []string
	for i := range *sts.Spec.Replicas {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", name, i),
				Labels:          sts.Spec.Template.Labels,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
			Spec: sts.Spec.Template.Spec,
		}
		// Pod Security (the operand namespace may enforce it) admits the
		// template as the operator wrote it.
		if err := c.Create(ctx, p); err != nil {
			t.Fatalf("creating pod from the StatefulSet template: %v", err)
		}
		SetPodReady(ctx, t, c, ns, p.Name, true)
		names = append(names, p.Name)
	}
	return names
}

// SetPodReady sets the pod Running with its Ready condition as given, as
// the kubelet would after a readiness probe.
func SetPodReady(ctx context.Context, t testing.TB, c client.Client, ns, name string, ready bool) {
	t.Helper()
	cond := corev1.ConditionFalse
	if ready {
		cond = corev1.ConditionTrue
	}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return err
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: cond, LastTransitionTime: metav1.Now()}}
		return c.Status().Update(ctx, p)
	}); err != nil {
		t.Fatal(err)
	}
}

package reconcile

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFindStuck reads pods as a kubelet and the scheduler leave them: only
// a wait that needs a change (a pull that fails, a crash loop, no node)
// stops the rollout; a container being created, a pod being deleted and a
// running pod do not.
func TestFindStuck(t *testing.T) {
	waiting := func(name, reason, msg string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Image: "status/" + name,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
	}
	running := corev1.ContainerStatus{Name: "guestbook", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	pod := func(name string, statuses ...corev1.ContainerStatus) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "guestbook", Image: "example.com/gb:2"}}},
			Status: corev1.PodStatus{ContainerStatuses: statuses}}
	}
	deleting := pod("gb-1", waiting("guestbook", "ImagePullBackOff", ""))
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	unschedulable := pod("gb-1")
	unschedulable.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."}}
	initStuck := pod("gb-1")
	initStuck.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "example.com/init:1"}}
	initStuck.Status.InitContainerStatuses = []corev1.ContainerStatus{waiting("init", "CrashLoopBackOff", "back-off 40s restarting failed container")}

	tests := []struct {
		name string
		pods []corev1.Pod
		want string // "" when no pod is stuck
	}{
		{"running", []corev1.Pod{pod("gb-0", running)}, ""},
		{"creating", []corev1.Pod{pod("gb-0", waiting("guestbook", "ContainerCreating", ""))}, ""},
		{"pull back-off names the spec's image",
			[]corev1.Pod{pod("gb-0", running), pod("gb-1", waiting("guestbook", "ImagePullBackOff", `Back-off pulling image "example.com/gb:2"`))},
			`pod gb-1 cannot run container guestbook: ImagePullBackOff, image example.com/gb:2 (Back-off pulling image "example.com/gb:2")`},
		{"crash loop", []corev1.Pod{pod("gb-0", waiting("guestbook", "CrashLoopBackOff", ""))},
			"pod gb-0 cannot run container guestbook: CrashLoopBackOff, image example.com/gb:2"},
		{"init container first", []corev1.Pod{initStuck},
			"pod gb-1 cannot run container init: CrashLoopBackOff, image example.com/init:1 (back-off 40s restarting failed container)"},
		{"being deleted", []corev1.Pod{deleting}, ""},
		{"unschedulable", []corev1.Pod{unschedulable},
			"pod gb-1 cannot be scheduled: 0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."},
		{"kubelet message clipped", []corev1.Pod{pod("gb-0", waiting("guestbook", "ErrImagePull", strings.Repeat("é", 300)))},
			"pod gb-0 cannot run container guestbook: ErrImagePull, image example.com/gb:2 (" + strings.Repeat("é", stuckMessageMax/2) + "...)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ok := findStuck(tt.pods)
			got := ""
			if ok {
				got = s.String()
			}
			if got != tt.want {
				t.Errorf("findStuck = %q, want %q", got, tt.want)
			}
		})
	}
}

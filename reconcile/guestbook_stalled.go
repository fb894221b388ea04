package reconcile

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
)

// stuckReasons are the waiting reasons a kubelet gives a container that
// cannot run and will not without a change: an image it cannot pull or
// that is named wrong, a container that keeps exiting, a configuration it
// cannot build the container from. ContainerCreating and PodInitializing
// are progress, not among them.
var stuckReasons = []string{
	"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
	"CrashLoopBackOff", "CreateContainerConfigError", "CreateContainerError", "RunContainerError",
}

// stuckMessageMax bounds what status repeats of the kubelet's message: it
// is the registry's or the runtime's text, of any length.
const stuckMessageMax = 200

// stuckPod is a pod of the Guestbook that cannot run the template the
// operator wrote: the first of its containers (init containers first)
// that waits for a reason in stuckReasons, or the scheduler's refusal.
type stuckPod struct {
	pod, container, reason, image, message string
}

// String names the pod, its container, the reason and the image, the
// facts a user needs to tell a typo in the image from a crash.
func (s stuckPod) String() string {
	if s.container == "" {
		return fmt.Sprintf("pod %s cannot be scheduled: %s", s.pod, s.message)
	}
	out := fmt.Sprintf("pod %s cannot run container %s: %s, image %s", s.pod, s.container, s.reason, s.image)
	if s.message != "" {
		out += " (" + s.message + ")"
	}
	return out
}

// findStuck reports the first pod, by name, that cannot run: the rollout of
// the StatefulSet stops at it (it replaces pods one at a time, and waits
// for each to be Ready). Pods being deleted are left out: they are on
// their way out, not the rollout's.
func findStuck(pods []corev1.Pod) (stuckPod, bool) {
	for i := range pods {
		p := &pods[i]
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		if s, ok := stuckIn(p); ok {
			return s, true
		}
	}
	return stuckPod{}, false
}

// stuckIn reads one pod's status as a kubelet and the scheduler wrote it.
func stuckIn(p *corev1.Pod) (stuckPod, bool) {
	images := map[string]string{}
	for _, c := range slices.Concat(p.Spec.InitContainers, p.Spec.Containers) {
		images[c.Name] = c.Image
	}
	for _, cs := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
		w := cs.State.Waiting
		if w == nil || !slices.Contains(stuckReasons, w.Reason) {
			continue
		}
		image := images[cs.Name]
		if image == "" {
			image = cs.Image
		}
		return stuckPod{pod: p.Name, container: cs.Name, reason: w.Reason, image: image, message: clip(w.Message)}, true
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return stuckPod{pod: p.Name, reason: c.Reason, message: clip(c.Message)}, true
		}
	}
	return stuckPod{}, false
}

// clip shortens s to stuckMessageMax bytes at a rune boundary.
func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= stuckMessageMax {
		return s
	}
	cut := stuckMessageMax
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

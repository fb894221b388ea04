package podrunner

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ready is the runner's verdict on a pod, as a kubelet computes it: every
// container runs, and each one with a readiness probe passes it.
func (rp *runningPod) ready() bool {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	for i := range rp.pod.Spec.Containers {
		c := &rp.pod.Spec.Containers[i]
		st, ok := rp.containers[c.Name]
		if !ok || !st.started.Load() || (c.ReadinessProbe != nil && !st.ready.Load()) {
			return false
		}
	}
	return len(rp.pod.Spec.Containers) > 0
}

// reportStatus writes the pod's Ready and ContainersReady conditions from
// the real probe, and its containers' statuses (waiting for an image it
// cannot pull, running, crash-looping, restarted), as a kubelet does,
// whenever the cluster's say otherwise; in one patch. kwok marks every pod
// on a fake node Ready as soon as it is scheduled, whether or not anything
// answers; left like that, a Deployment's rollout would take a pod that
// serves nothing as available and stop an old one that does, and a pod
// whose image does not exist would look like any other. The e2e suite's
// and make demo's clusters therefore have kwok make the runner's pods
// Running but not Ready (test/framework/kwokconfig),
// and the runner says the rest. kwok writes a pod's status once (its
// pod-ready stage matches only Pending pods), so the runner's writes stand.
func (r *Runner) reportStatus(ctx context.Context, p *corev1.Pod, rp *runningPod) {
	// Until kwok has made the pod Running, its stage would still write
	// over the status.
	if p.Status.Phase != corev1.PodRunning || r.reportCompletion(ctx, p, rp) {
		return
	}
	want := corev1.ConditionFalse
	if rp.ready() && gatesPass(p) {
		want = corev1.ConditionTrue
	}
	inits := rp.containerStatuses(rp.pod.Spec.InitContainers, r.cfg.ContainerPrefix)
	mains := rp.containerStatuses(rp.pod.Spec.Containers, r.cfg.ContainerPrefix)
	sameConds := podCondition(p, corev1.PodReady) == want && podCondition(p, corev1.ContainersReady) == want
	if sameConds && sameStatuses(p.Status.InitContainerStatuses, inits) && sameStatuses(p.Status.ContainerStatuses, mains) {
		return
	}
	status := map[string]any{"containerStatuses": mains}
	if len(inits) > 0 {
		status["initContainerStatuses"] = inits
	}
	if !sameConds {
		reason := ""
		if want == corev1.ConditionFalse {
			reason = "ContainersNotReady"
		}
		now := metav1.NewTime(time.Now())
		var conds []corev1.PodCondition
		for _, t := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
			conds = append(conds, corev1.PodCondition{Type: t, Status: want, LastTransitionTime: now, Reason: reason})
		}
		// A strategic merge patch merges conditions by type: the other
		// conditions, and everything else kwok wrote, stay. The lists of
		// container statuses are replaced whole.
		status["conditions"] = conds
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return
	}
	if _, err := r.cfg.Client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		if ctx.Err() == nil {
			r.cfg.Logf("pod runner: %s: reporting its status (Ready=%s): %v", p.Name, want, err)
		}
		return
	}
	if !sameConds {
		r.cfg.Logf("pod runner: %s: Ready=%s (readiness probe)", p.Name, want)
	}
	for _, cs := range slices.Concat(inits, mains) {
		if w := cs.State.Waiting; w != nil && w.Reason != "ContainerCreating" {
			r.cfg.Logf("pod runner: %s: container %s waiting: %s", p.Name, cs.Name, w.Reason)
		}
	}
}

// gatesPass says whether every readiness gate of the pod has its
// condition True, which a kubelet requires besides ready containers.
func gatesPass(p *corev1.Pod) bool {
	for _, g := range p.Spec.ReadinessGates {
		if podCondition(p, g.ConditionType) != corev1.ConditionTrue {
			return false
		}
	}
	return true
}

// podCondition is the status of the pod's condition of type t, or "".
func podCondition(p *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

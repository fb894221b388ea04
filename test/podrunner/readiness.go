package podrunner

import (
	"context"
	"encoding/json"
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

// reportReadiness writes the pod's Ready and ContainersReady conditions
// from the real probe, as a kubelet does, whenever the cluster's say
// otherwise. kwok marks every pod on a fake node Ready as soon as it is
// scheduled, whether or not anything answers; left like that, a
// Deployment's rollout would take a pod that serves nothing as available
// and stop an old one that does. The e2e suite's cluster therefore has
// kwok make the runner's pods Running but not Ready, and the runner says
// when they are. kwok writes a pod's status once (its pod-ready stage
// matches only Pending pods), so the runner's writes stand.
func (r *Runner) reportReadiness(ctx context.Context, p *corev1.Pod, rp *runningPod) {
	// Until kwok has made the pod Running, its stage would still write
	// over the conditions.
	if p.Status.Phase != corev1.PodRunning {
		return
	}
	want := corev1.ConditionFalse
	if rp.ready() && gatesPass(p) {
		want = corev1.ConditionTrue
	}
	if podCondition(p, corev1.PodReady) == want && podCondition(p, corev1.ContainersReady) == want {
		return
	}
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
	// conditions, and everything kwok wrote, stay.
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
	if err != nil {
		return
	}
	if _, err := r.cfg.Client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		if ctx.Err() == nil {
			r.cfg.Logf("pod runner: %s: reporting Ready=%s: %v", p.Name, want, err)
		}
		return
	}
	r.cfg.Logf("pod runner: %s: Ready=%s (readiness probe)", p.Name, want)
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

package podrunner

import (
	"context"
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// runsOnce says whether a container of p that exited, with err, is done
// rather than restarted, as a kubelet decides from the pod's restartPolicy:
// Never, or OnFailure after a success. (The Helm chart's test pod runs
// once, config/helm-test.)
func runsOnce(p *corev1.Pod, err error) bool {
	switch p.Spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return true
	case corev1.RestartPolicyOnFailure:
		return err == nil
	}
	return false
}

// completed is the phase a kubelet gives a pod whose containers have all
// run to their end (runsOnce): Succeeded when each exited 0, Failed
// otherwise; false while one still runs or will run again.
func (rp *runningPod) completed(prefix string) (corev1.PodPhase, bool) {
	phase := corev1.PodSucceeded
	for i := range rp.pod.Spec.Containers {
		st := rp.container(rp.pod.Spec.Containers[i].Name, prefix)
		if !st.done.Load() {
			return "", false
		}
		if now, _ := st.states.snapshot(); now.Terminated == nil || now.Terminated.ExitCode != 0 {
			phase = corev1.PodFailed
		}
	}
	return phase, len(rp.pod.Spec.Containers) > 0
}

// reportCompletion writes the end of a pod that ran to completion, once:
// its phase, its containers' terminated states, and Ready and
// ContainersReady False for PodCompleted, as a kubelet does. It reports
// whether the pod has completed (so that the running pod's report is not
// written over it).
func (r *Runner) reportCompletion(ctx context.Context, p *corev1.Pod, rp *runningPod) bool {
	phase, done := rp.completed(r.cfg.ContainerPrefix)
	if !done {
		return false
	}
	if p.Status.Phase == phase {
		return true
	}
	now := metav1.NewTime(time.Now())
	var conds []corev1.PodCondition
	for _, t := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
		conds = append(conds, corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, LastTransitionTime: now, Reason: "PodCompleted"})
	}
	status := map[string]any{
		"phase":             phase,
		"conditions":        conds,
		"containerStatuses": rp.containerStatuses(rp.pod.Spec.Containers, r.cfg.ContainerPrefix),
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return true
	}
	if _, err := r.cfg.Client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		if ctx.Err() == nil {
			r.cfg.Logf("pod runner: %s: reporting its end (%s): %v", p.Name, phase, err)
		}
		return true
	}
	r.cfg.Logf("pod runner: %s: %s (restartPolicy %s)", p.Name, phase, p.Spec.RestartPolicy)
	return true
}

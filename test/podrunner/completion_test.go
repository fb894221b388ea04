package podrunner

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestRunsOnce(t *testing.T) {
	failed := errors.New("exit status 1")
	for _, tc := range []struct {
		policy corev1.RestartPolicy
		err    error
		want   bool
	}{
		{corev1.RestartPolicyAlways, nil, false},
		{corev1.RestartPolicyAlways, failed, false},
		{"", nil, false}, // the API server defaults it to Always
		{corev1.RestartPolicyNever, nil, true},
		{corev1.RestartPolicyNever, failed, true},
		{corev1.RestartPolicyOnFailure, nil, true},
		{corev1.RestartPolicyOnFailure, failed, false},
	} {
		p := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: tc.policy}}
		if got := runsOnce(p, tc.err); got != tc.want {
			t.Errorf("runsOnce(%q, %v) = %v, want %v", tc.policy, tc.err, got, tc.want)
		}
	}
}

// TestCompleted: a pod is done when every container is, Succeeded only
// when every one exited 0.
func TestCompleted(t *testing.T) {
	exit := func(code int32) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
	}
	for _, tc := range []struct {
		name   string
		states map[string]*corev1.ContainerState // nil: still running
		phase  corev1.PodPhase
		done   bool
	}{
		{"both exited 0", map[string]*corev1.ContainerState{"a": new(exit(0)), "b": new(exit(0))}, corev1.PodSucceeded, true},
		{"one exited 2", map[string]*corev1.ContainerState{"a": new(exit(0)), "b": new(exit(2))}, corev1.PodFailed, true},
		{"one still runs", map[string]*corev1.ContainerState{"a": new(exit(0)), "b": nil}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp := &runningPod{pod: &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}}}, containers: map[string]*container{}}
			for name, st := range tc.states {
				c := rp.container(name, "p-")
				if st != nil {
					c.states.set(*st)
					c.done.Store(true)
				}
			}
			phase, done := rp.completed("p-")
			if phase != tc.phase || done != tc.done {
				t.Errorf("completed = %q, %v; want %q, %v", phase, done, tc.phase, tc.done)
			}
		})
	}
}

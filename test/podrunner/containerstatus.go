package podrunner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// crashWithin is how soon after its start a container's exit counts as a
// crash: the runner then says CrashLoopBackOff while it waits to restart
// it, as a kubelet does. A container that ran longer (one a test killed)
// shows Terminated until it runs again, and restarts at once.
const crashWithin = 10 * time.Second

// states is what a kubelet reports of one container: its state now and
// the last one it ended in.
type states struct {
	mu   sync.Mutex
	now  corev1.ContainerState
	last corev1.ContainerState
}

func (s *states) set(now corev1.ContainerState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Terminated != nil {
		s.last = now
	}
	s.now = now
}

// waiting is a kubelet's Waiting state with its reason and message.
func (s *states) waiting(reason, message string) {
	s.set(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}})
}

// snapshot copies the states for a pod's status.
func (s *states) snapshot() (now, last corev1.ContainerState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.now.DeepCopy(), *s.last.DeepCopy()
}

// pullArgs is the command that stands in for a kubelet's pull of image:
// an image of the loopback registry (Config.PullFrom) is pulled, every
// time a container starts, so that the registry is asked each time; any
// other must be in podman's store already, as if pulled before (the
// runner never fetches it from elsewhere).
func (r *Runner) pullArgs(image string) []string {
	if r.cfg.PullFrom != "" && strings.HasPrefix(image, r.cfg.PullFrom+"/") {
		return Podman("pull", "--quiet", "--tls-verify=false", image)
	}
	return Podman("image", "exists", image)
}

// pull makes image available to podman run, or says why not in the words
// of a kubelet's ErrImagePull.
func (r *Runner) pull(image string) error {
	args := r.pullArgs(image)
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err == nil {
		return nil
	}
	why := "image not known"
	if lines := bytes.Split(bytes.TrimSpace(out), []byte("\n")); len(lines[len(lines)-1]) > 0 {
		why = string(lines[len(lines)-1])
	}
	return fmt.Errorf("failed to pull image %q: %s", image, why)
}

// containerStatuses is what a kubelet would write of the containers of the
// pod: for each of list, its spec's image, its state and last state, its
// restarts and readiness.
func (rp *runningPod) containerStatuses(list []corev1.Container, prefix string) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for i := range list {
		c := &list[i]
		st := rp.container(c.Name, prefix)
		now, last := st.states.snapshot()
		if now == (corev1.ContainerState{}) {
			now.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
		}
		started := st.started.Load()
		out = append(out, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, State: now, LastTerminationState: last, RestartCount: st.restarts.Load(),
			Ready: started && (c.ReadinessProbe == nil || st.ready.Load()), Started: &started,
		})
	}
	return out
}

// sameStatuses compares what the runner writes of containers, ignoring
// what only others write (IDs, resources) and the times.
func sameStatuses(a, b []corev1.ContainerStatus) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(s corev1.ContainerStatus) string {
		k := fmt.Sprintf("%s|%d|%v|%v", s.Name, s.RestartCount, s.Ready, s.Started != nil && *s.Started)
		for _, st := range []corev1.ContainerState{s.State, s.LastTerminationState} {
			switch {
			case st.Waiting != nil:
				k += "|waiting " + st.Waiting.Reason + " " + st.Waiting.Message
			case st.Running != nil:
				k += "|running"
			case st.Terminated != nil:
				k += fmt.Sprintf("|terminated %d %s", st.Terminated.ExitCode, st.Terminated.Reason)
			default:
				k += "|-"
			}
		}
		return k
	}
	for i := range a {
		if key(a[i]) != key(b[i]) {
			return false
		}
	}
	return true
}

// terminated is the state of a container that exited with err after
// running since started.
func terminated(err error, started time.Time) corev1.ContainerState {
	code, reason := int32(0), "Completed"
	if err != nil {
		code, reason = 1, "Error"
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() > 0 {
			code = int32(ee.ExitCode())
		}
	}
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: code, Reason: reason, StartedAt: metav1.NewTime(started), FinishedAt: metav1.Now(),
	}}
}

// pullError is a container that did not start because its image could not
// be had.
type pullError struct{ err error }

func (e *pullError) Error() string { return e.err.Error() }

// restartWait waits before a container runs again, saying what a kubelet
// would say meanwhile: ErrImagePull and then ImagePullBackOff for an image
// it could not have, CrashLoopBackOff for a container that exited within
// crashWithin of its start. It returns the next back-off (doubled after a
// failure, reset after a container that ran a while) and whether ctx is
// still going.
func (r *Runner) restartWait(ctx context.Context, p *corev1.Pod, c *corev1.Container, st *container, err error, ran, backoff time.Duration) (time.Duration, bool) {
	var pe *pullError
	switch {
	case errors.As(err, &pe):
		st.states.waiting("ErrImagePull", pe.Error())
		r.cfg.Logf("pod runner: %s container %s: %v; retrying in %s", p.Name, c.Name, pe, backoff)
		first := min(time.Second, backoff)
		if !sleep(ctx, first) {
			return backoff, false
		}
		st.states.waiting("ImagePullBackOff", fmt.Sprintf("Back-off pulling image %q: ErrImagePull: %v", c.Image, pe))
		return min(2*backoff, maxBackoff), sleep(ctx, backoff-first)
	case ran >= crashWithin:
		r.cfg.Logf("pod runner: %s container %s exited after %s (%v); restarting", p.Name, c.Name, ran.Round(time.Second), err)
		return time.Second, sleep(ctx, 100*time.Millisecond)
	default:
		st.states.waiting("CrashLoopBackOff", fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", backoff, c.Name, p.Name, p.Namespace, p.UID))
		r.cfg.Logf("pod runner: %s container %s exited (%v); restarting in %s", p.Name, c.Name, err, backoff)
		return min(2*backoff, maxBackoff), sleep(ctx, backoff)
	}
}

package podrunner

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// The podman command line for config/manager's manager container: the
// pod's user, read-only root, dropped capabilities, env with the API
// server and the downward API, its volume, and its ports moved to the
// slot's host ports.
func TestPodmanRun(t *testing.T) {
	r, err := New(Config{Client: fake.NewClientset(), Namespace: "ns", Selector: "a=b", APIServer: "https://127.0.0.1:32766",
		Dir: t.TempDir(), ContainerPrefix: "demo-", HostPortBase: 31000})
	if err != nil {
		t.Fatal(err)
	}
	c := corev1.Container{
		Name: "manager", Image: "img:1", Command: []string{"/manager"},
		Args: []string{"--leader-elect", "--health-probe-bind-address=:8081", "--webhook-port=9443", "--other=8081x"},
		Env: []corev1.EnvVar{
			{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			{Name: "MEMORY_LIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "manager", Resource: "limits.memory"}}},
			{Name: "MEMORY_MI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.memory", Divisor: resource.MustParse("1Mi")}}},
		},
		Resources: corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
		Ports: []corev1.ContainerPort{{Name: "webhook", ContainerPort: 9443}, {Name: "probes", ContainerPort: 8081}},
		SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
		VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-a", Namespace: "ns"}, Spec: corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532)},
		Containers:      []corev1.Container{c},
	}}
	rp := &runningPod{pod: p, slot: 2, containers: map[string]*container{}}
	args, err := r.podmanRun(rp, &c, "demo-pod-a-manager", []string{"tmp\x00type=tmpfs,destination={{path}}"})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(args, " ")
	for _, want := range []string{
		"--name demo-pod-a-manager", "--user 65532:65532", "--read-only", "--security-opt no-new-privileges", "--cap-drop all",
		"--env KUBERNETES_SERVICE_HOST=127.0.0.1", "--env KUBERNETES_SERVICE_PORT=32766", "--env POD_NAMESPACE=ns", "--env MEMORY_LIMIT=268435456", "--env MEMORY_MI=64",
		"--mount type=tmpfs,destination=/tmp", `--entrypoint ["/manager"]`,
		"img:1 --leader-elect --health-probe-bind-address=:31201 --webhook-port=31200 --other=8081x", "--pull never",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("podman run lacks %q:\n%s", want, got)
		}
	}
	// Images of the loopback registry are pulled over plain HTTP before
	// each start; others must be in podman's store. podman run itself
	// never pulls.
	r.cfg.PullFrom = "127.0.0.1:5000"
	for image, want := range map[string]string{
		"127.0.0.1:5000/release/myoperator@sha256:00": "pull --quiet --tls-verify=false 127.0.0.1:5000/release/myoperator@sha256:00",
		"img:1": "image exists img:1",
	} {
		if got := strings.Join(r.pullArgs(image), " "); !strings.HasSuffix(got, want) {
			t.Errorf("%s: pulled with %q, want %q", image, got, want)
		}
		c.Image = image
		args, err := r.podmanRun(rp, &c, "x", []string{"tmp\x00type=tmpfs,destination={{path}}"})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(args, " "); !strings.Contains(got, "--pull never") || strings.Count(got, "--pull") != 1 {
			t.Errorf("%s: podman run pulls:\n%s", image, got)
		}
	}
	c.Image = "img:1"

	// An isolated pod's container keeps its own ports in a network of its
	// own, published on loopback at the slot's host ports.
	iso := &runningPod{pod: p, slot: 2, isolated: true, containers: map[string]*container{}}
	args, err = r.podmanRun(iso, &c, "x", []string{"tmp\x00type=tmpfs,destination={{path}}"})
	if err != nil {
		t.Fatal(err)
	}
	got = strings.Join(args, " ")
	for _, want := range []string{"--network bridge", "--publish 127.0.0.1:31200:9443/tcp", "--publish 127.0.0.1:31201:8081/tcp",
		"img:1 --leader-elect --health-probe-bind-address=:8081 --webhook-port=9443"} {
		if !strings.Contains(got, want) {
			t.Errorf("isolated: podman run lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "--network host") {
		t.Errorf("isolated: podman run on the host network:\n%s", got)
	}

	p.Spec.SecurityContext.RunAsUser = ptr.To[int64](0)
	if _, err := r.podmanRun(rp, &c, "x", nil); err == nil || !strings.Contains(err.Error(), "runAsNonRoot") {
		t.Errorf("root under runAsNonRoot: got %v, want a refusal", err)
	}
}

// TestPodmanRunBounds: the container's memory limit becomes podman's, as
// the kubelet puts it on the cgroup, and a mountPath that would add
// options to --mount is refused.
func TestPodmanRunBounds(t *testing.T) {
	r, err := New(Config{Client: fake.NewClientset(), Namespace: "ns", Selector: "a=b", APIServer: "https://127.0.0.1:32766",
		Dir: t.TempDir(), ContainerPrefix: "demo-", HostPortBase: 31000})
	if err != nil {
		t.Fatal(err)
	}
	pod := func(c corev1.Container) *runningPod {
		return &runningPod{pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-a", Namespace: "ns"}, Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](65532)}, Containers: []corev1.Container{c}}},
			containers: map[string]*container{}}
	}
	limited := corev1.Container{Name: "manager", Image: "img:1", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}}}
	args, err := r.podmanRun(pod(limited), &limited, "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(args, " "); !strings.Contains(got, "--memory 536870912 --memory-swap 536870912") {
		t.Errorf("podman run lacks the memory limit:\n%s", got)
	}
	for _, path := range []string{"/tmp,source=/etc,destination=/host-etc", "/data=x", "tmp", "/a/../etc", "/tmp\n"} {
		c := corev1.Container{Name: "manager", Image: "img:1", VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: path}}}
		_, err := r.podmanRun(pod(c), &c, "x", []string{"tmp\x00type=tmpfs,destination={{path}}"})
		if err == nil || !strings.Contains(err.Error(), "mountPath") {
			t.Errorf("mountPath %q: got %v, want a refusal", path, err)
		}
	}
}

// TestProjectedFilesPrivate: a projected token is written 0600 and owned
// by the pod's one user, as the kubelet writes it; a path that leaves the
// volume is refused.
func TestProjectedFilesPrivate(t *testing.T) {
	dir := t.TempDir()
	p := &corev1.Pod{Spec: corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532)},
		InitContainers:  []corev1.Container{{Name: "bootstrap"}}, Containers: []corev1.Container{{Name: "manager"}}}}
	if err := writeFile(dir, "token", "secret", projectedOwner(p)); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().Perm() != 0o600 || st.Uid != 65532 || st.Gid != 65532 {
		t.Errorf("token: mode %v uid %d gid %d, want 0600 65532 65532", fi.Mode().Perm(), st.Uid, st.Gid)
	}
	if err := writeFile(dir, "../escaped", "x", projectedOwner(p)); err == nil {
		t.Error("a path out of the volume was written")
	}
	// Containers of different users share the file through the fsGroup.
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000)}
	p.Spec.SecurityContext.FSGroup = ptr.To[int64](2000)
	if o := projectedOwner(p); o.mode != 0o640 || o.gid != 2000 {
		t.Errorf("two users with fsGroup 2000: %+v, want 0640 group 2000", o)
	}
}

// TestContainerStates: what the runner reports of a container, as a
// kubelet would: ErrImagePull and then ImagePullBackOff for an image
// podman's store lacks (asked of podman itself), CrashLoopBackOff for one
// that exits soon after its start, Terminated (and a restart at once) for
// one that ran a while; the pod's status lists them with the spec's image
// and the restarts.
func TestContainerStates(t *testing.T) {
	if _, err := exec.LookPath("podman"); err != nil {
		t.Skip("podman is not installed (hack/ensure-podman.sh installs it)")
	}
	r, err := New(Config{Client: fake.NewClientset(), Namespace: "ns", Selector: "a=b", APIServer: "https://127.0.0.1:32766",
		Dir: t.TempDir(), ContainerPrefix: "test-", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	const image = "localhost/myoperator-test/no-such-image:1"
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gb-1", Namespace: "guestbook", UID: "u1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "guestbook", Image: image}}}}
	rp := &runningPod{pod: p, containers: map[string]*container{}}
	c := &p.Spec.Containers[0]
	st := rp.container(c.Name, "test-")
	reason := func() string {
		cs := rp.containerStatuses(p.Spec.Containers, "test-")
		if len(cs) != 1 || cs[0].Image != image {
			t.Fatalf("statuses %+v, want one of image %s", cs, image)
		}
		switch s := cs[0].State; {
		case s.Waiting != nil:
			return s.Waiting.Reason + ": " + s.Waiting.Message
		case s.Running != nil:
			return "Running"
		case s.Terminated != nil:
			return "Terminated " + s.Terminated.Reason
		}
		return "none"
	}
	if got := reason(); got != "ContainerCreating: " {
		t.Errorf("before any start: %q, want ContainerCreating", got)
	}

	err = r.runContainer(rp, c, nil)
	var pe *pullError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), `failed to pull image "`+image+`"`) {
		t.Fatalf("runContainer of a missing image = %v, want a pull error naming it", err)
	}
	done := make(chan struct{})
	var next time.Duration
	go func() {
		defer close(done)
		next, _ = r.restartWait(context.Background(), p, c, st, err, 0, 1500*time.Millisecond)
	}()
	time.Sleep(300 * time.Millisecond)
	if got := reason(); !strings.HasPrefix(got, "ErrImagePull: failed to pull image") {
		t.Errorf("just after the pull failed: %q, want ErrImagePull", got)
	}
	<-done
	if got := reason(); !strings.HasPrefix(got, `ImagePullBackOff: Back-off pulling image "`+image+`"`) {
		t.Errorf("after the first second: %q, want ImagePullBackOff naming the image", got)
	}
	if next != 3*time.Second {
		t.Errorf("next back-off %s, want 3s (doubled)", next)
	}

	// A crash: exit 2 right after its start.
	st.states.set(terminated(exec.Command("sh", "-c", "exit 2").Run(), time.Now()))
	st.restarts.Add(1)
	if next, _ = r.restartWait(context.Background(), p, c, st, errors.New("exit status 2"), time.Second, 10*time.Millisecond); next != 20*time.Millisecond {
		t.Errorf("after a crash, next back-off %s, want 20ms", next)
	}
	if got := reason(); !strings.HasPrefix(got, "CrashLoopBackOff: back-off 10ms restarting failed container=guestbook pod=gb-1_guestbook(u1)") {
		t.Errorf("after a crash: %q, want CrashLoopBackOff", got)
	}
	cs := rp.containerStatuses(p.Spec.Containers, "test-")[0]
	if term := cs.LastTerminationState.Terminated; term == nil || term.ExitCode != 2 || cs.RestartCount != 1 {
		t.Errorf("last state %+v, restarts %d; want exit code 2 and 1 restart", cs.LastTerminationState, cs.RestartCount)
	}

	// A container that ran a while and was killed restarts at once.
	st.states.set(terminated(errors.New("signal: killed"), time.Now().Add(-time.Minute)))
	if next, _ = r.restartWait(context.Background(), p, c, st, errors.New("signal: killed"), time.Minute, 8*time.Second); next != time.Second {
		t.Errorf("after a long run, next back-off %s, want 1s (reset)", next)
	}
	if got := reason(); got != "Terminated Error" {
		t.Errorf("after a long run: %q, want Terminated Error until it runs again", got)
	}
}

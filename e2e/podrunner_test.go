//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// podman runs containers the way FACTS.md found to work on these machines:
// cgroupfs and runc (crun and the default ulimits fail here).
var podman = []string{"podman", "--cgroup-manager=cgroupfs", "--runtime", "/usr/sbin/runc"}

// hostPortBase is where the pod runner maps container ports: a pod in slot
// s gets hostPortBase + 100*s + i for its i-th port. Replicas share the
// host network, so each needs ports of its own.
const hostPortBase = 30000

// podRunner plays the kubelet for the operator's pods. kwok nodes run no
// containers, so for each operator pod the cluster schedules, it runs the
// pod's initContainers and then its containers from the image under podman,
// with the pod's command, args, env, user, read-only root filesystem and
// volumes (the ServiceAccount token from a TokenRequest bound to the pod),
// restarts a container that exits, and stops them when the pod goes away.
// Nothing here decides what the cluster decides: the pods (replicas,
// admission under Pod Security, scheduling, deletion) are the cluster's.
type podRunner struct {
	cs        kubernetes.Interface
	namespace string
	selector  string
	apiHost   string // KUBERNETES_SERVICE_HOST / _PORT for in-cluster config
	apiPort   string
	dir       string // per-pod volumes and container logs

	mu   sync.Mutex
	pods map[types.UID]*runningPod
	used map[int]bool // slots in use
}

// runningPod is one operator pod and its containers.
type runningPod struct {
	pod    *corev1.Pod
	slot   int
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	containers map[string]*container
}

// container is one running (or restarting) container of a pod.
type container struct {
	name     string // podman's name
	restarts atomic.Int32
	ready    atomic.Bool
	started  atomic.Bool // the main process is running
}

func newPodRunner(cs kubernetes.Interface, namespace, selector, apiServer, dir string) (*podRunner, error) {
	host, port, err := splitServer(apiServer)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &podRunner{cs: cs, namespace: namespace, selector: selector, apiHost: host, apiPort: port, dir: dir,
		pods: map[types.UID]*runningPod{}, used: map[int]bool{}}, nil
}

// splitServer turns https://127.0.0.1:32766 into host and port.
func splitServer(server string) (string, string, error) {
	rest, ok := strings.CutPrefix(server, "https://")
	if !ok {
		return "", "", fmt.Errorf("API server %q is not https", server)
	}
	i := strings.LastIndex(rest, ":")
	if i < 0 {
		return rest, "443", nil
	}
	return rest[:i], rest[i+1:], nil
}

// Run syncs the operator's pods with containers every half second until ctx
// ends, then stops every container (gracefully, as a kubelet would).
func (r *podRunner) Run(ctx context.Context) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		r.sync(ctx)
		select {
		case <-ctx.Done():
			r.stopAll()
			return
		case <-tick.C:
		}
	}
}

func (r *podRunner) sync(ctx context.Context) {
	list, err := r.cs.CoreV1().Pods(r.namespace).List(ctx, metav1.ListOptions{LabelSelector: r.selector})
	if err != nil {
		return // the namespace may be gone (uninstall) or the API busy; next tick
	}
	live := map[types.UID]bool{}
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
			continue
		}
		live[p.UID] = true
		r.mu.Lock()
		_, known := r.pods[p.UID]
		r.mu.Unlock()
		if !known {
			r.start(ctx, p)
		}
	}
	r.mu.Lock()
	var gone []*runningPod
	for uid, rp := range r.pods {
		if !live[uid] {
			gone = append(gone, rp)
			delete(r.pods, uid)
		}
	}
	r.mu.Unlock()
	for _, rp := range gone {
		r.stop(rp)
	}
}

func (r *podRunner) start(ctx context.Context, p *corev1.Pod) {
	r.mu.Lock()
	slot := 0
	for r.used[slot] {
		slot++
	}
	r.used[slot] = true
	podCtx, cancel := context.WithCancel(ctx)
	rp := &runningPod{pod: p.DeepCopy(), slot: slot, cancel: cancel, done: make(chan struct{}), containers: map[string]*container{}}
	r.pods[p.UID] = rp
	r.mu.Unlock()
	go func() {
		defer close(rp.done)
		if err := r.runPod(podCtx, rp); err != nil && podCtx.Err() == nil {
			fmt.Printf("e2e: pod runner: %s: %v\n", p.Name, err)
		}
	}()
}

// stop ends a pod's containers with the pod's grace period, like a kubelet.
func (r *podRunner) stop(rp *runningPod) {
	grace := int64(30)
	if g := rp.pod.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	rp.cancel()
	rp.mu.Lock()
	for _, c := range rp.containers {
		stop := podmanArgs("stop", "--ignore", "-t", strconv.FormatInt(grace, 10), c.name)
		_ = exec.Command(stop[0], stop[1:]...).Run()
	}
	rp.mu.Unlock()
	<-rp.done
	r.mu.Lock()
	delete(r.used, rp.slot)
	r.mu.Unlock()
}

func (r *podRunner) stopAll() {
	r.mu.Lock()
	var all []*runningPod
	for uid, rp := range r.pods {
		all = append(all, rp)
		delete(r.pods, uid)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, rp := range all {
		wg.Go(func() { r.stop(rp) })
	}
	wg.Wait()
}

func podmanArgs(args ...string) []string { return append(append([]string{}, podman...), args...) }

// runPod prepares the pod's volumes, runs its initContainers in order to
// completion, then runs its containers, restarting each when it exits
// (restartPolicy Always, with a growing back-off).
func (r *podRunner) runPod(ctx context.Context, rp *runningPod) error {
	p := rp.pod
	mounts, err := r.prepareVolumes(ctx, p)
	if err != nil {
		return fmt.Errorf("volumes: %w", err)
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		for backoff := time.Second; ; backoff = min(2*backoff, 10*time.Second) {
			err := r.runContainer(rp, c, mounts)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return nil
			}
			fmt.Printf("e2e: pod runner: %s init container %s failed (%v); retrying in %s\n", p.Name, c.Name, err, backoff)
			time.Sleep(backoff)
		}
	}
	var wg sync.WaitGroup
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		wg.Go(func() {
			for backoff := time.Second; ctx.Err() == nil; backoff = min(2*backoff, 10*time.Second) {
				err := r.runContainer(rp, c, mounts)
				if ctx.Err() != nil {
					return
				}
				rp.container(c.Name).restarts.Add(1)
				fmt.Printf("e2e: pod runner: %s container %s exited (%v); restarting in %s\n", p.Name, c.Name, err, backoff)
				time.Sleep(backoff)
			}
		})
		if c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet != nil {
			wg.Go(func() { r.probe(ctx, rp, c) })
		}
	}
	wg.Wait()
	return nil
}

func (rp *runningPod) container(name string) *container {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	c, ok := rp.containers[name]
	if !ok {
		c = &container{name: "e2e-" + rp.pod.Name + "-" + name}
		rp.containers[name] = c
	}
	return c
}

// hostPort is where the pod's container port (number or name) listens on
// the host network.
func hostPort(rp *runningPod, c *corev1.Container, port intstr.IntOrString) (int, bool) {
	for i, cp := range c.Ports {
		if (port.Type == intstr.String && cp.Name == port.StrVal) || (port.Type == intstr.Int && cp.ContainerPort == port.IntVal) {
			return hostPortBase + 100*rp.slot + i, true
		}
	}
	return 0, false
}

// rewriteArgs moves the container's ports to the pod's host ports: a flag
// value that is exactly a container port (9443) or an all-interfaces
// address of one (:8081) gets the host port instead.
func rewriteArgs(rp *runningPod, c *corev1.Container) []string {
	out := make([]string, 0, len(c.Args))
	for _, a := range c.Args {
		flag, val, ok := strings.Cut(a, "=")
		if ok {
			for _, cp := range c.Ports {
				p := strconv.Itoa(int(cp.ContainerPort))
				hp, _ := hostPort(rp, c, intstr.FromInt32(cp.ContainerPort))
				switch val {
				case p:
					a = flag + "=" + strconv.Itoa(hp)
				case ":" + p:
					a = flag + "=:" + strconv.Itoa(hp)
				}
			}
		}
		out = append(out, a)
	}
	return out
}

// runContainer runs one container of the pod in the foreground until it
// exits or ctx ends; its output goes to the container's log file.
func (r *podRunner) runContainer(rp *runningPod, c *corev1.Container, mounts []string) error {
	p := rp.pod
	st := rp.container(c.Name)
	args, err := r.podmanRun(rp, c, st.name, mounts)
	if err != nil {
		return err
	}
	log, err := os.OpenFile(r.LogFile(p.Name, c.Name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	fmt.Fprintf(log, "=== e2e pod runner: %s start %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(args, " "))
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	// Not killed with the test's context: stop() ends it with podman stop,
	// as a kubelet would, and a kill is what a test asks for explicitly.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	st.started.Store(true)
	err = cmd.Wait()
	st.started.Store(false)
	st.ready.Store(false)
	fmt.Fprintf(log, "=== e2e pod runner: %s exit %v\n", time.Now().Format(time.RFC3339Nano), err)
	return err
}

// podmanRun translates a container of the pod spec into podman run
// arguments: what a kubelet would give the container runtime.
func (r *podRunner) podmanRun(rp *runningPod, c *corev1.Container, name string, mounts []string) ([]string, error) {
	p := rp.pod
	args := podmanArgs("run", "--rm", "--replace", "--name", name, "--hostname", p.Name,
		"--network", "host", "--pull", "never", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024")
	user, err := runAsUser(p, c)
	if err != nil {
		return nil, err
	}
	args = append(args, "--user", user)
	sc := c.SecurityContext
	if sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
		args = append(args, "--read-only", "--read-only-tmpfs=false")
	}
	if sc != nil && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		args = append(args, "--security-opt", "no-new-privileges")
	}
	if sc != nil && sc.Capabilities != nil {
		for _, d := range sc.Capabilities.Drop {
			args = append(args, "--cap-drop", strings.ToLower(string(d)))
		}
	}
	env := []string{"KUBERNETES_SERVICE_HOST=" + r.apiHost, "KUBERNETES_SERVICE_PORT=" + r.apiPort}
	for _, e := range c.Env {
		v, err := envValue(p, e)
		if err != nil {
			return nil, fmt.Errorf("container %s: %w", c.Name, err)
		}
		env = append(env, e.Name+"="+v)
	}
	for _, e := range env {
		args = append(args, "--env", e)
	}
	for _, vm := range c.VolumeMounts {
		m, ok := findMount(mounts, vm.Name)
		if !ok {
			return nil, fmt.Errorf("container %s: volume %s not prepared", c.Name, vm.Name)
		}
		args = append(args, "--mount", strings.ReplaceAll(m, "{{path}}", vm.MountPath))
	}
	if len(c.Command) > 0 {
		ep, _ := json.Marshal(c.Command)
		args = append(args, "--entrypoint", string(ep))
	}
	args = append(args, c.Image)
	return append(args, rewriteArgs(rp, c)...), nil
}

// runAsUser is the container's uid:gid from its or the pod's security
// context; like a kubelet, it refuses to run as root under runAsNonRoot.
func runAsUser(p *corev1.Pod, c *corev1.Container) (string, error) {
	var uid, gid *int64
	var nonRoot *bool
	if ps := p.Spec.SecurityContext; ps != nil {
		uid, gid, nonRoot = ps.RunAsUser, ps.RunAsGroup, ps.RunAsNonRoot
	}
	if cs := c.SecurityContext; cs != nil {
		if cs.RunAsUser != nil {
			uid = cs.RunAsUser
		}
		if cs.RunAsGroup != nil {
			gid = cs.RunAsGroup
		}
		if cs.RunAsNonRoot != nil {
			nonRoot = cs.RunAsNonRoot
		}
	}
	if uid == nil {
		return "", fmt.Errorf("container %s: no runAsUser (the pod runner does not read the image's user)", c.Name)
	}
	if nonRoot != nil && *nonRoot && *uid == 0 {
		return "", fmt.Errorf("container %s: runAsNonRoot and runAsUser 0", c.Name)
	}
	if gid == nil {
		return strconv.FormatInt(*uid, 10), nil
	}
	return fmt.Sprintf("%d:%d", *uid, *gid), nil
}

// envValue resolves an env var of the pod spec (values and the downward
// API fields the operator uses).
func envValue(p *corev1.Pod, e corev1.EnvVar) (string, error) {
	if e.ValueFrom == nil {
		return e.Value, nil
	}
	if f := e.ValueFrom.FieldRef; f != nil {
		return fieldValue(p, f.FieldPath)
	}
	return "", fmt.Errorf("env %s: only values and fieldRef are supported", e.Name)
}

func fieldValue(p *corev1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return p.Name, nil
	case "metadata.namespace":
		return p.Namespace, nil
	case "metadata.uid":
		return string(p.UID), nil
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, nil
	case "spec.nodeName":
		return p.Spec.NodeName, nil
	case "status.podIP", "status.hostIP":
		return "127.0.0.1", nil
	}
	return "", fmt.Errorf("field %s is not supported", path)
}

// findMount returns the --mount value prepared for a volume, with
// {{path}} standing for the mount path.
func findMount(mounts []string, volume string) (string, bool) {
	for _, m := range mounts {
		if v, spec, _ := strings.Cut(m, "\x00"); v == volume {
			return spec, true
		}
	}
	return "", false
}

// prepareVolumes makes the pod's volumes: emptyDir as a tmpfs, projected
// volumes (the ServiceAccount token, the cluster CA, the namespace) as
// files in a host directory mounted read-only. Each entry is
// "volume\x00--mount value".
func (r *podRunner) prepareVolumes(ctx context.Context, p *corev1.Pod) ([]string, error) {
	var mounts []string
	for _, v := range p.Spec.Volumes {
		switch {
		case v.EmptyDir != nil:
			size := ""
			if v.EmptyDir.SizeLimit != nil {
				size = ",tmpfs-size=" + strconv.FormatInt(v.EmptyDir.SizeLimit.Value(), 10)
			}
			mounts = append(mounts, v.Name+"\x00type=tmpfs,destination={{path}},tmpfs-mode=1777"+size)
		case v.Projected != nil:
			dir := filepath.Join(r.dir, "volumes", p.Name, v.Name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			for _, src := range v.Projected.Sources {
				if err := r.project(ctx, p, src, dir); err != nil {
					return nil, fmt.Errorf("volume %s: %w", v.Name, err)
				}
			}
			mounts = append(mounts, v.Name+"\x00type=bind,source="+dir+",destination={{path}},ro=true")
		default:
			return nil, fmt.Errorf("volume %s: only emptyDir and projected volumes are supported", v.Name)
		}
	}
	return mounts, nil
}

// project writes one projected source: a token from a TokenRequest bound
// to the pod (what the kubelet asks for), ConfigMap keys, downward API
// fields.
func (r *podRunner) project(ctx context.Context, p *corev1.Pod, src corev1.VolumeProjection, dir string) error {
	write := func(path, data string) error { return os.WriteFile(filepath.Join(dir, path), []byte(data), 0o644) }
	switch {
	case src.ServiceAccountToken != nil:
		s := src.ServiceAccountToken
		req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: s.ExpirationSeconds,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID},
		}}
		if s.Audience != "" {
			req.Spec.Audiences = []string{s.Audience}
		}
		tr, err := r.cs.CoreV1().ServiceAccounts(p.Namespace).CreateToken(ctx, p.Spec.ServiceAccountName, req, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("token for %s: %w", p.Spec.ServiceAccountName, err)
		}
		return write(s.Path, tr.Status.Token)
	case src.ConfigMap != nil:
		var cm *corev1.ConfigMap
		// kube-root-ca.crt is published into a new namespace shortly after
		// it is created.
		deadline := time.Now().Add(30 * time.Second)
		for {
			var err error
			cm, err = r.cs.CoreV1().ConfigMaps(p.Namespace).Get(ctx, src.ConfigMap.Name, metav1.GetOptions{})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return err
			}
			time.Sleep(500 * time.Millisecond)
		}
		for _, it := range src.ConfigMap.Items {
			if err := write(it.Path, cm.Data[it.Key]); err != nil {
				return err
			}
		}
	case src.DownwardAPI != nil:
		for _, it := range src.DownwardAPI.Items {
			if it.FieldRef == nil {
				return fmt.Errorf("downward API %s: only fieldRef is supported", it.Path)
			}
			v, err := fieldValue(p, it.FieldRef.FieldPath)
			if err != nil {
				return err
			}
			if err := write(it.Path, v); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unsupported projected source")
	}
	return nil
}

// probe runs the container's HTTP readiness probe on its host port.
func (r *podRunner) probe(ctx context.Context, rp *runningPod, c *corev1.Container) {
	pr := c.ReadinessProbe
	port, ok := hostPort(rp, c, pr.HTTPGet.Port)
	if !ok {
		return
	}
	period := time.Duration(max(pr.PeriodSeconds, 1)) * time.Second
	// Probing faster than the spec says only shortens the suite; the
	// verdict is the same endpoint's.
	period = min(period, time.Second)
	url := fmt.Sprintf("http://127.0.0.1:%d%s", port, pr.HTTPGet.Path)
	hc := &http.Client{Timeout: time.Second}
	st := rp.container(c.Name)
	for ctx.Err() == nil {
		ready := false
		if st.started.Load() {
			if resp, err := hc.Get(url); err == nil {
				ready = resp.StatusCode == http.StatusOK
				resp.Body.Close()
			}
		}
		st.ready.Store(ready)
		select {
		case <-ctx.Done():
		case <-time.After(period):
		}
	}
}

// podState is what the runner knows of one pod: its slot and its
// containers' podman names, restarts and readiness.
type podState struct {
	Pod      string
	Slot     int
	Ready    bool
	Restarts int32
	Names    map[string]string // container -> podman name
}

// Pods reports the pods the runner runs.
func (r *podRunner) Pods() []podState {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []podState
	for _, rp := range r.pods {
		s := podState{Pod: rp.pod.Name, Slot: rp.slot, Ready: len(rp.pod.Spec.Containers) > 0, Names: map[string]string{}}
		rp.mu.Lock()
		for _, c := range rp.pod.Spec.Containers {
			st, ok := rp.containers[c.Name]
			if !ok || !st.ready.Load() {
				s.Ready = false
			}
			if ok {
				s.Restarts += st.restarts.Load()
				s.Names[c.Name] = st.name
			}
		}
		rp.mu.Unlock()
		out = append(out, s)
	}
	return out
}

// endpoints are the host ports of a container port in ready pods (what a
// Service sends traffic to) and in running but not ready ones.
func (r *podRunner) endpoints(containerPort int32) (ready, rest []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rp := range r.pods {
		rp.mu.Lock()
		for i := range rp.pod.Spec.Containers {
			c := &rp.pod.Spec.Containers[i]
			hp, ok := hostPort(rp, c, intstr.FromInt32(containerPort))
			st, known := rp.containers[c.Name]
			if !ok || !known || !st.started.Load() {
				continue
			}
			if st.ready.Load() {
				ready = append(ready, hp)
			} else {
				rest = append(rest, hp)
			}
		}
		rp.mu.Unlock()
	}
	return ready, rest
}

// Kill sends SIGKILL to a container of the named pod, as a node failure or
// OOM kill would; the runner restarts it like a kubelet.
func (r *podRunner) Kill(pod, containerName string) error {
	for _, s := range r.Pods() {
		if s.Pod == pod {
			args := podmanArgs("kill", "--signal", "KILL", s.Names[containerName])
			if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
				return fmt.Errorf("%w: %s", err, out)
			}
			return nil
		}
	}
	return fmt.Errorf("pod %s is not running", pod)
}

// LogFile is where the output of a pod's container goes.
func (r *podRunner) LogFile(pod, containerName string) string {
	return filepath.Join(r.dir, pod+"_"+containerName+".log")
}

// LogFiles lists the container log files written so far.
func (r *podRunner) LogFiles() []string {
	files, _ := filepath.Glob(filepath.Join(r.dir, "*.log"))
	return files
}

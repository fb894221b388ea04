package podrunner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// podman runs containers the way that works on the project's CI machines:
// cgroupfs and runc (crun and the default ulimits fail here).
var podman = []string{"podman", "--cgroup-manager=cgroupfs", "--runtime", "/usr/sbin/runc"}

// Podman returns the podman command line for args, with the global flags
// every podman call of the runner uses.
func Podman(args ...string) []string { return append(append([]string{}, podman...), args...) }

// DefaultHostPortBase is where container ports go unless Config says
// otherwise: a pod in slot s gets base + 100*s + i for its i-th port.
// Replicas share the host network, so each needs ports of its own.
const DefaultHostPortBase = 30000

// maxBackoff caps the wait between two restarts of a container, or two
// attempts at preparing a pod's volumes.
const maxBackoff = 10 * time.Second

// Config says which pods to run and where.
type Config struct {
	// Client reads the pods and asks for their ServiceAccount tokens.
	Client kubernetes.Interface
	// Namespace and Selector (a label selector) name the pods to run, on
	// the host network (they may call the API server on loopback).
	Namespace, Selector string
	// Also names more pods to run as those, on the host network (the Helm
	// chart's test pod, which reads the API server).
	Also []Target
	// Isolated names more pods to run, each container in a network of its
	// own (podman's bridge) with its ports published on loopback at the
	// pod's host ports: for pods that call nothing on this host, which
	// then listen on their own ports as in a pod of their own, so that two
	// of them never contend for one port.
	Isolated []Target
	// APIServer is the cluster's https URL; the containers get it as
	// KUBERNETES_SERVICE_HOST and _PORT, as in-cluster pods do.
	APIServer string
	// Dir holds the pods' projected volumes and the containers' logs.
	Dir string
	// ContainerPrefix starts the name of every podman container the runner
	// makes ("<prefix><pod>-<container>"); containers with this prefix
	// belong to the runner and are removed when it starts.
	ContainerPrefix string
	// HostPortBase moves the pods' ports (DefaultHostPortBase when 0), so
	// that two runners on one network do not collide.
	HostPortBase int
	// PodIPs gives each pod its status.podIP on this network namespace's
	// loopback device, serving its container ports there (podAddress):
	// what lets a Service's endpoints answer. The runner must run as root.
	PodIPs bool
	// PullFrom, when set, is a registry (host:port) on loopback that
	// serves over plain HTTP: images under it are pulled at every
	// container start (even when podman's store has the same layers, so
	// that the registry is asked each time); every other image must be in
	// podman's store already (never pulled).
	PullFrom string
	// Logf reports what happens to pods and containers (log.Printf when
	// nil). Container output goes to LogFile, not here.
	Logf func(format string, args ...any)
}

// Target is a namespace and a label selector of pods.
type Target struct {
	Namespace, Selector string
}

// Runner plays the kubelet for the pods that Config selects. For each pod
// the cluster schedules, it runs the pod's initContainers and then its
// containers from the image under podman, with the pod's command, args,
// env, user, read-only root filesystem and volumes (the ServiceAccount
// token from a TokenRequest bound to the pod, renewed before it expires),
// restarts a container that exits, and stops them when the pod goes away.
// Nothing here decides what the cluster decides: the pods (replicas,
// admission under Pod Security, scheduling, deletion) are the cluster's.
type Runner struct {
	cfg     Config
	apiHost string
	apiPort string

	mu   sync.Mutex
	pods map[types.UID]*runningPod
	used map[int]bool // slots in use
	// ips counts the pods serving each pod IP on the loopback device
	// (Config.PodIPs). kwok gives a freed IP to the next pod at once, so a
	// new pod can hold the address while the old one is still stopping;
	// the address goes when the last of them stops. Its own lock: stop
	// releases an address while it holds a pod's lock.
	ipMu sync.Mutex
	ips  map[string]int
	// stopping counts the pods being stopped: their preStop sleeps and
	// grace periods run beside the sync loop, as a kubelet's do.
	stopping sync.WaitGroup
}

// runningPod is one pod and its containers.
type runningPod struct {
	pod      *corev1.Pod
	slot     int
	isolated bool // in a network of its own (Config.Isolated)
	cancel   context.CancelFunc
	done     chan struct{}

	mu         sync.Mutex
	containers map[string]*container
	addr       *podAddress // its pod IP, once served (Config.PodIPs)
}

// container is one running (or restarting) container of a pod.
type container struct {
	name     string // podman's name
	restarts atomic.Int32
	ready    atomic.Bool
	started  atomic.Bool // the main process is running
	done     atomic.Bool // it ran to its end and is not run again (runsOnce)
	states   states      // what the pod's status says of it
}

// New checks cfg and makes the runner's directory.
func New(cfg Config) (*Runner, error) {
	if cfg.Client == nil || cfg.Namespace == "" || cfg.Selector == "" || cfg.Dir == "" || cfg.ContainerPrefix == "" {
		return nil, errors.New("podrunner: Client, Namespace, Selector, Dir and ContainerPrefix are required")
	}
	host, port, err := splitServer(cfg.APIServer)
	if err != nil {
		return nil, err
	}
	if cfg.HostPortBase == 0 {
		cfg.HostPortBase = DefaultHostPortBase
	}
	if cfg.Logf == nil {
		cfg.Logf = log.Printf
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	return &Runner{cfg: cfg, apiHost: host, apiPort: port, pods: map[types.UID]*runningPod{}, used: map[int]bool{}, ips: map[string]int{}}, nil
}

// splitServer turns https://127.0.0.1:32766 into host and port.
func splitServer(server string) (string, string, error) {
	rest, ok := strings.CutPrefix(server, "https://")
	if !ok {
		return "", "", fmt.Errorf("podrunner: API server %q is not https", server)
	}
	i := strings.LastIndex(rest, ":")
	if i < 0 {
		return rest, "443", nil
	}
	return rest[:i], rest[i+1:], nil
}

// Run removes containers left by an earlier runner with the same prefix
// (one that was killed, so could not stop them), then syncs the pods with
// containers every half second until ctx ends, and then stops every
// container (gracefully, as a kubelet would) before it returns. API errors
// do not end it: it reports them once and keeps trying, since a cluster
// that restarts or is busy comes back.
func (r *Runner) Run(ctx context.Context) {
	if err := r.removeLeftovers(); err != nil {
		r.cfg.Logf("pod runner: removing leftover containers: %v", err)
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var lastErr string
	for {
		err := r.sync(ctx)
		switch {
		case err != nil && ctx.Err() == nil && err.Error() != lastErr:
			r.cfg.Logf("pod runner: listing pods (retrying every 0.5 s): %v", err)
			lastErr = err.Error()
		case err == nil && lastErr != "":
			r.cfg.Logf("pod runner: listing pods works again")
			lastErr = ""
		}
		select {
		case <-ctx.Done():
			r.stopAll()
			return
		case <-tick.C:
		}
	}
}

// removeLeftovers removes every container whose name has the runner's
// prefix.
func (r *Runner) removeLeftovers() error {
	args := Podman("ps", "-a", "--format", "{{.Names}}", "--filter", "name=^"+r.cfg.ContainerPrefix)
	out, err := exec.Command(args[0], args[1:]...).Output()
	if err != nil {
		return fmt.Errorf("podman ps: %w", err)
	}
	names := strings.Fields(string(out))
	if len(names) == 0 {
		return nil
	}
	r.cfg.Logf("pod runner: removing %d leftover containers: %s", len(names), strings.Join(names, " "))
	args = Podman(append([]string{"rm", "-f", "--ignore"}, names...)...)
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		return fmt.Errorf("podman rm: %w: %s", err, out)
	}
	return nil
}

func (r *Runner) sync(ctx context.Context) error {
	live := map[types.UID]bool{}
	deleted := map[types.UID]bool{}
	host := append([]Target{{Namespace: r.cfg.Namespace, Selector: r.cfg.Selector}}, r.cfg.Also...)
	targets := slices.Concat(host, r.cfg.Isolated)
	for i, target := range targets {
		list, err := r.cfg.Client.CoreV1().Pods(target.Namespace).List(ctx, metav1.ListOptions{LabelSelector: target.Selector})
		if err != nil {
			// The namespace may be gone (uninstall) or the API busy: next
			// tick, before the pods this list would keep are taken as gone.
			return err
		}
		for j := range list.Items {
			p := &list.Items[j]
			if p.DeletionTimestamp != nil {
				deleted[p.UID] = true
				continue
			}
			if p.Spec.NodeName == "" {
				continue
			}
			live[p.UID] = true
			r.mu.Lock()
			rp, known := r.pods[p.UID]
			r.mu.Unlock()
			if !known {
				r.start(ctx, p, i >= len(host))
				continue
			}
			r.exposePodIP(p, rp)
			r.reportStatus(ctx, p, rp)
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
		r.cfg.Logf("pod runner: pod %s is gone; stopping its containers", rp.pod.Name)
		r.stopping.Go(func() {
			r.stop(rp)
			if deleted[rp.pod.UID] {
				r.finishDeletion(ctx, rp.pod)
			}
		})
	}
	return nil
}

// finishDeletion removes a deleted pod once its containers have stopped,
// as a kubelet does: until then the pod object stays (terminating), and
// with it the ServiceAccount token bound to it, so that a stopping
// manager can still release its Lease. (The stages of
// test/framework/kwokconfig, which the e2e suite's and make demo's
// clusters use, leave these pods' deletion to the runner; elsewhere kwok
// may have removed the pod already.)
func (r *Runner) finishDeletion(ctx context.Context, p *corev1.Pod) {
	uid := p.UID
	err := r.cfg.Client.CoreV1().Pods(p.Namespace).Delete(context.WithoutCancel(ctx), p.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64(0)), Preconditions: &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		r.cfg.Logf("pod runner: %s: removing the deleted pod: %v", p.Name, err)
	}
}

func (r *Runner) start(ctx context.Context, p *corev1.Pod, isolated bool) {
	r.mu.Lock()
	slot := 0
	for r.used[slot] {
		slot++
	}
	r.used[slot] = true
	podCtx, cancel := context.WithCancel(ctx)
	rp := &runningPod{pod: p.DeepCopy(), slot: slot, isolated: isolated, cancel: cancel, done: make(chan struct{}), containers: map[string]*container{}}
	r.pods[p.UID] = rp
	r.mu.Unlock()
	r.cfg.Logf("pod runner: starting pod %s on node %s (host ports from %d)", p.Name, p.Spec.NodeName, r.cfg.HostPortBase+100*slot)
	go func() {
		defer close(rp.done)
		r.runPod(podCtx, rp)
	}()
}

// stop ends a pod's containers with the pod's grace period, like a
// kubelet: the pod has already left the endpoints (sync forgot it), each
// container's preStop sleep runs first, then SIGTERM, then SIGKILL when
// the grace period is over.
func (r *Runner) stop(rp *runningPod) {
	grace := int64(30)
	if g := rp.pod.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	var preStop int64
	for _, c := range rp.pod.Spec.Containers {
		if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
			preStop = max(preStop, c.Lifecycle.PreStop.Sleep.Seconds)
		}
	}
	if preStop = min(preStop, grace); preStop > 0 {
		r.cfg.Logf("pod runner: %s: preStop sleep %ds before SIGTERM", rp.pod.Name, preStop)
		time.Sleep(time.Duration(preStop) * time.Second)
		grace -= preStop
	}
	rp.cancel()
	rp.mu.Lock()
	for _, c := range rp.containers {
		stop := Podman("stop", "--ignore", "-t", strconv.FormatInt(grace, 10), c.name)
		if out, err := exec.Command(stop[0], stop[1:]...).CombinedOutput(); err != nil {
			r.cfg.Logf("pod runner: %s: podman stop %s: %v: %s", rp.pod.Name, c.name, err, out)
		}
	}
	rp.mu.Unlock()
	<-rp.done
	// The pod IP serves until the containers are gone, as a pod's network
	// does: during the preStop sleep, API servers that have not yet seen
	// the pod leave the endpoints still call it.
	rp.mu.Lock()
	if rp.addr != nil {
		rp.addr.close()
		rp.addr = nil
	}
	rp.mu.Unlock()
	r.mu.Lock()
	delete(r.used, rp.slot)
	r.mu.Unlock()
}

func (r *Runner) stopAll() {
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
	r.stopping.Wait()
}

// sleep waits d or until ctx ends, and says whether ctx is still going.
func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// runPod prepares the pod's volumes (retrying with a back-off: a token
// request can fail while the API server is busy), runs its initContainers
// in order to completion, then runs its containers, restarting each when it
// exits (restartPolicy Always, with a growing back-off; Never and OnFailure
// as runsOnce says), until ctx ends.
func (r *Runner) runPod(ctx context.Context, rp *runningPod) {
	p := rp.pod
	var mounts []string
	var renew time.Duration
	for backoff := time.Second; ; backoff = min(2*backoff, maxBackoff) {
		var err error
		if mounts, renew, err = r.prepareVolumes(ctx, p); err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		r.cfg.Logf("pod runner: %s: volumes: %v; retrying in %s", p.Name, err, backoff)
		if !sleep(ctx, backoff) {
			return
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	if renew > 0 {
		wg.Go(func() { r.renewTokens(ctx, p, renew) })
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		st := rp.container(c.Name, r.cfg.ContainerPrefix)
		for backoff := time.Second; ; {
			start := time.Now()
			err := r.runContainer(rp, c, mounts)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			var pe *pullError
			if !errors.As(err, &pe) {
				st.restarts.Add(1)
			}
			var ok bool
			if backoff, ok = r.restartWait(ctx, p, c, st, err, time.Since(start), backoff); !ok {
				return
			}
		}
	}
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		st := rp.container(c.Name, r.cfg.ContainerPrefix)
		wg.Go(func() {
			for backoff := time.Second; ctx.Err() == nil; {
				start := time.Now()
				err := r.runContainer(rp, c, mounts)
				if ctx.Err() != nil {
					return
				}
				var pe *pullError
				if !errors.As(err, &pe) {
					if runsOnce(p, err) {
						st.done.Store(true)
						r.cfg.Logf("pod runner: %s container %s ended (%v); restartPolicy %s: not run again", p.Name, c.Name, err, p.Spec.RestartPolicy)
						return
					}
					st.restarts.Add(1)
				}
				var ok bool
				if backoff, ok = r.restartWait(ctx, p, c, st, err, time.Since(start), backoff); !ok {
					return
				}
			}
		})
		if c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet != nil {
			wg.Go(func() { r.probe(ctx, rp, c) })
		}
	}
}

func (rp *runningPod) container(name, prefix string) *container {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	c, ok := rp.containers[name]
	if !ok {
		c = &container{name: prefix + rp.pod.Name + "-" + name}
		rp.containers[name] = c
	}
	return c
}

// hostPort is where the pod's container port (number or name) listens on
// the host network.
func (r *Runner) hostPort(rp *runningPod, c *corev1.Container, port intstr.IntOrString) (int, bool) {
	for i, cp := range c.Ports {
		if (port.Type == intstr.String && cp.Name == port.StrVal) || (port.Type == intstr.Int && cp.ContainerPort == port.IntVal) {
			return r.cfg.HostPortBase + 100*rp.slot + i, true
		}
	}
	return 0, false
}

// rewriteArgs moves the container's ports to the pod's host ports: a flag
// value that is exactly a container port (9443) or an all-interfaces
// address of one (:8081) gets the host port instead.
func (r *Runner) rewriteArgs(rp *runningPod, c *corev1.Container) []string {
	out := make([]string, 0, len(c.Args))
	for _, a := range c.Args {
		flag, val, ok := strings.Cut(a, "=")
		if ok {
			for _, cp := range c.Ports {
				p := strconv.Itoa(int(cp.ContainerPort))
				hp, _ := r.hostPort(rp, c, intstr.FromInt32(cp.ContainerPort))
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
// exits; its output goes to the container's log file.
func (r *Runner) runContainer(rp *runningPod, c *corev1.Container, mounts []string) error {
	p := rp.pod
	st := rp.container(c.Name, r.cfg.ContainerPrefix)
	if err := r.pull(c.Image); err != nil {
		return &pullError{err}
	}
	args, err := r.podmanRun(rp, c, st.name, mounts)
	if err != nil {
		st.states.waiting("CreateContainerConfigError", err.Error())
		return err
	}
	logFile, err := os.OpenFile(r.LogFile(p.Name, c.Name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "=== pod runner: %s start %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(args, " "))
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Not killed with the runner's context and in a process group of its
	// own, so that a Ctrl-C meant for the runner does not reach it: stop()
	// ends it with podman stop and the pod's grace period, as a kubelet
	// would, and a kill is what a caller asks for explicitly (Kill).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		st.states.waiting("RunContainerError", err.Error())
		return err
	}
	started := time.Now()
	st.states.set(corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}})
	st.started.Store(true)
	err = cmd.Wait()
	st.started.Store(false)
	st.ready.Store(false)
	st.states.set(terminated(err, started))
	fmt.Fprintf(logFile, "=== pod runner: %s exit %v\n", time.Now().Format(time.RFC3339Nano), err)
	return err
}

// podmanRun translates a container of the pod spec into podman run
// arguments: what a kubelet would give the container runtime.
func (r *Runner) podmanRun(rp *runningPod, c *corev1.Container, name string, mounts []string) ([]string, error) {
	p := rp.pod
	// The image is there: pull (pullArgs) fetched it, or it was already.
	args := Podman("run", "--rm", "--replace", "--name", name, "--hostname", p.Name,
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", "--pull", "never")
	if rp.isolated {
		args = append(args, "--network", "bridge")
		for _, cp := range c.Ports {
			hp, _ := r.hostPort(rp, c, intstr.FromInt32(cp.ContainerPort))
			proto := strings.ToLower(string(cp.Protocol))
			if proto == "" {
				proto = "tcp"
			}
			args = append(args, "--publish", fmt.Sprintf("127.0.0.1:%d:%d/%s", hp, cp.ContainerPort, proto))
		}
	} else {
		args = append(args, "--network", "host")
	}
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
	// The memory limit, as the kubelet sets it on the container's cgroup:
	// a container that passes it is killed for memory here too, and swap
	// does not stretch it.
	if limit, ok := c.Resources.Limits[corev1.ResourceMemory]; ok && limit.Value() > 0 {
		v := strconv.FormatInt(limit.Value(), 10)
		args = append(args, "--memory", v, "--memory-swap", v)
	}
	env := []string{"KUBERNETES_SERVICE_HOST=" + r.apiHost, "KUBERNETES_SERVICE_PORT=" + r.apiPort}
	for _, e := range c.Env {
		v, err := envValue(p, c.Name, e)
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
		if err := mountOption(vm.MountPath); err != nil {
			return nil, fmt.Errorf("container %s: volume %s: mountPath: %w", c.Name, vm.Name, err)
		}
		args = append(args, "--mount", strings.ReplaceAll(m, "{{path}}", vm.MountPath))
	}
	if len(c.Command) > 0 {
		ep, err := json.Marshal(c.Command)
		if err != nil {
			return nil, err
		}
		args = append(args, "--entrypoint", string(ep))
	}
	args = append(args, c.Image)
	if rp.isolated {
		return append(args, c.Args...), nil // its ports are its own
	}
	return append(args, r.rewriteArgs(rp, c)...), nil
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
// API fields and resources the operator uses).
func envValue(p *corev1.Pod, container string, e corev1.EnvVar) (string, error) {
	if e.ValueFrom == nil {
		return e.Value, nil
	}
	if f := e.ValueFrom.FieldRef; f != nil {
		return fieldValue(p, f.FieldPath)
	}
	if r := e.ValueFrom.ResourceFieldRef; r != nil {
		v, err := resourceValue(p, container, r)
		if err != nil {
			return "", fmt.Errorf("env %s: %w", e.Name, err)
		}
		return v, nil
	}
	return "", fmt.Errorf("env %s: only values, fieldRef and resourceFieldRef are supported", e.Name)
}

// resourceValue is a container's resource as the kubelet gives it: the
// quantity divided by the divisor (1 by default), rounded up. The pod
// runner sets no cgroup limit, so a limit the container does not have is
// an error here rather than the node's capacity.
func resourceValue(p *corev1.Pod, container string, r *corev1.ResourceFieldSelector) (string, error) {
	if r.ContainerName != "" {
		container = r.ContainerName
	}
	for _, c := range p.Spec.Containers {
		if c.Name != container {
			continue
		}
		kind, name, ok := strings.Cut(r.Resource, ".")
		if !ok {
			return "", fmt.Errorf("resource %q is not supported", r.Resource)
		}
		list := c.Resources.Limits
		if kind == "requests" {
			list = c.Resources.Requests
		}
		q, ok := list[corev1.ResourceName(name)]
		if !ok {
			return "", fmt.Errorf("container %s has no %s", c.Name, r.Resource)
		}
		divisor := r.Divisor
		if divisor.IsZero() {
			divisor = resource.MustParse("1")
		}
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	return "", fmt.Errorf("no container %q", container)
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
// mountOption checks a path that goes into a podman --mount value, a
// comma-separated list of key=value options: an absolute, clean path
// without a comma, an equals sign or a control character, so that a pod
// spec cannot add options (another source, a read-write bind of the host).
func mountOption(path string) error {
	switch {
	case !filepath.IsAbs(path) || filepath.Clean(path) != path:
		return fmt.Errorf("%q is not an absolute, clean path", path)
	case strings.ContainsAny(path, ",="):
		return fmt.Errorf("%q holds a comma or an equals sign, which would add --mount options", path)
	case strings.IndexFunc(path, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return fmt.Errorf("%q holds a control character", path)
	}
	return nil
}

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
// "volume\x00--mount value". renew is when the first token should be
// renewed (0 without tokens).
func (r *Runner) prepareVolumes(ctx context.Context, p *corev1.Pod) (mounts []string, renew time.Duration, err error) {
	for _, v := range p.Spec.Volumes {
		switch {
		case v.EmptyDir != nil:
			size := ""
			if v.EmptyDir.SizeLimit != nil {
				size = ",tmpfs-size=" + strconv.FormatInt(v.EmptyDir.SizeLimit.Value(), 10)
			}
			mounts = append(mounts, v.Name+"\x00type=tmpfs,destination={{path}},tmpfs-mode=1777"+size)
		case v.Projected != nil || v.ConfigMap != nil:
			dir := r.volumeDir(p, v.Name)
			if err := mountOption(dir); err != nil {
				return nil, 0, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, 0, err
			}
			if v.ConfigMap != nil {
				if err := r.writeConfigMap(ctx, p, v.ConfigMap, dir); err != nil {
					return nil, 0, fmt.Errorf("volume %s: %w", v.Name, err)
				}
			}
			for _, src := range sources(v) {
				d, err := r.project(ctx, p, src, dir)
				if err != nil {
					return nil, 0, fmt.Errorf("volume %s: %w", v.Name, err)
				}
				if d > 0 && (renew == 0 || d < renew) {
					renew = d
				}
			}
			mounts = append(mounts, v.Name+"\x00type=bind,source="+dir+",destination={{path}},ro=true")
		default:
			return nil, 0, fmt.Errorf("volume %s: only emptyDir, projected and configMap volumes are supported", v.Name)
		}
	}
	return mounts, renew, nil
}

// sources are a projected volume's sources (none for another volume).
func sources(v corev1.Volume) []corev1.VolumeProjection {
	if v.Projected == nil {
		return nil
	}
	return v.Projected.Sources
}

// writeConfigMap writes a configMap volume's files as the kubelet does
// when the pod starts: the items it names, or else every key of the
// ConfigMap's data. A missing ConfigMap fails the pod's start (retried),
// unless the volume is optional. Later changes of the ConfigMap are not
// followed.
func (r *Runner) writeConfigMap(ctx context.Context, p *corev1.Pod, src *corev1.ConfigMapVolumeSource, dir string) error {
	cm, err := r.cfg.Client.CoreV1().ConfigMaps(p.Namespace).Get(ctx, src.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) && src.Optional != nil && *src.Optional:
		return nil
	case err != nil:
		return fmt.Errorf("configmap %s: %w", src.Name, err)
	}
	items := src.Items
	if len(items) == 0 {
		for k := range cm.Data {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
	}
	for _, it := range items {
		v, ok := cm.Data[it.Key]
		if !ok {
			return fmt.Errorf("configmap %s has no key %s", src.Name, it.Key)
		}
		if err := writeFile(dir, it.Path, v, projectedOwner(p)); err != nil {
			return err
		}
	}
	return nil
}

func (r *Runner) volumeDir(p *corev1.Pod, volume string) string {
	return filepath.Join(r.cfg.Dir, "volumes", p.Name, volume)
}

// renewTokens writes new ServiceAccount tokens into the pod's projected
// volumes when 80% of the shortest one's life has passed, as the kubelet
// does; client-go in the container reads the file again. A failed renewal
// is retried in 10 s while the old token still works.
func (r *Runner) renewTokens(ctx context.Context, p *corev1.Pod, after time.Duration) {
	for sleep(ctx, after) {
		after = 0
		for _, v := range p.Spec.Volumes {
			if v.Projected == nil {
				continue
			}
			for _, src := range v.Projected.Sources {
				if src.ServiceAccountToken == nil {
					continue
				}
				d, err := r.project(ctx, p, src, r.volumeDir(p, v.Name))
				if err != nil {
					r.cfg.Logf("pod runner: %s: renewing the token of volume %s: %v; retrying in 10s", p.Name, v.Name, err)
					d = 10 * time.Second
				}
				if after == 0 || d < after {
					after = d
				}
			}
		}
	}
}

// fileOwner is who may read a projected volume's files: as the kubelet
// does, the pod's one user (its containers' runAsUser, when they all
// agree) with mode 0600; else its fsGroup with 0640; else anyone (0644).
type fileOwner struct {
	uid, gid int
	mode     os.FileMode
}

func projectedOwner(p *corev1.Pod) fileOwner {
	users := map[string]bool{}
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			u, err := runAsUser(p, &cs[i])
			if err != nil {
				return fileOwner{uid: -1, gid: -1, mode: 0o644}
			}
			users[u] = true
		}
	}
	if len(users) == 1 {
		for u := range users {
			uid, gid, found := strings.Cut(u, ":")
			o := fileOwner{gid: -1, mode: 0o600}
			o.uid, _ = strconv.Atoi(uid)
			if found {
				o.gid, _ = strconv.Atoi(gid)
			}
			return o
		}
	}
	if ps := p.Spec.SecurityContext; ps != nil && ps.FSGroup != nil {
		return fileOwner{uid: 0, gid: int(*ps.FSGroup), mode: 0o640}
	}
	return fileOwner{uid: -1, gid: -1, mode: 0o644}
}

// writeFile replaces a file at once (a rename), so that a container never
// reads half a token; it is owner's, with owner's mode, from the start.
func writeFile(dir, name, data string, owner fileOwner) error {
	if !filepath.IsLocal(name) {
		return fmt.Errorf("path %q leaves its volume", name)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(owner.mode); err != nil {
		tmp.Close()
		return err
	}
	if owner.uid >= 0 || owner.gid >= 0 {
		if err := tmp.Chown(owner.uid, owner.gid); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, name))
}

// project writes one projected source: a token from a TokenRequest bound
// to the pod (what the kubelet asks for), ConfigMap keys, downward API
// fields. For a token it returns when to renew it: after 80% of its life.
func (r *Runner) project(ctx context.Context, p *corev1.Pod, src corev1.VolumeProjection, dir string) (time.Duration, error) {
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
		issued := time.Now()
		tr, err := r.cfg.Client.CoreV1().ServiceAccounts(p.Namespace).CreateToken(ctx, p.Spec.ServiceAccountName, req, metav1.CreateOptions{})
		if err != nil {
			return 0, fmt.Errorf("token for %s: %w", p.Spec.ServiceAccountName, err)
		}
		if err := writeFile(dir, s.Path, tr.Status.Token, projectedOwner(p)); err != nil {
			return 0, err
		}
		return max(tr.Status.ExpirationTimestamp.Sub(issued)*8/10, time.Minute), nil
	case src.ConfigMap != nil:
		var cm *corev1.ConfigMap
		// kube-root-ca.crt is published into a new namespace shortly after
		// it is created.
		deadline := time.Now().Add(30 * time.Second)
		for {
			var err error
			cm, err = r.cfg.Client.CoreV1().ConfigMaps(p.Namespace).Get(ctx, src.ConfigMap.Name, metav1.GetOptions{})
			if err == nil {
				break
			}
			if time.Now().After(deadline) || !sleep(ctx, 500*time.Millisecond) {
				return 0, err
			}
		}
		for _, it := range src.ConfigMap.Items {
			if err := writeFile(dir, it.Path, cm.Data[it.Key], projectedOwner(p)); err != nil {
				return 0, err
			}
		}
	case src.DownwardAPI != nil:
		for _, it := range src.DownwardAPI.Items {
			if it.FieldRef == nil {
				return 0, fmt.Errorf("downward API %s: only fieldRef is supported", it.Path)
			}
			v, err := fieldValue(p, it.FieldRef.FieldPath)
			if err != nil {
				return 0, err
			}
			if err := writeFile(dir, it.Path, v, projectedOwner(p)); err != nil {
				return 0, err
			}
		}
	default:
		return 0, errors.New("unsupported projected source")
	}
	return 0, nil
}

// probe runs the container's HTTP readiness probe on its host port.
func (r *Runner) probe(ctx context.Context, rp *runningPod, c *corev1.Container) {
	pr := c.ReadinessProbe
	port, ok := r.hostPort(rp, c, pr.HTTPGet.Port)
	if !ok {
		return
	}
	period := time.Duration(max(pr.PeriodSeconds, 1)) * time.Second
	// Probing faster than the spec says only answers sooner; the verdict is
	// the same endpoint's.
	period = min(period, time.Second)
	url := fmt.Sprintf("http://127.0.0.1:%d%s", port, pr.HTTPGet.Path)
	hc := &http.Client{Timeout: time.Second}
	st := rp.container(c.Name, r.cfg.ContainerPrefix)
	for ctx.Err() == nil {
		ready := false
		if st.started.Load() {
			if resp, err := hc.Get(url); err == nil {
				ready = resp.StatusCode == http.StatusOK
				resp.Body.Close()
			}
		}
		st.ready.Store(ready)
		sleep(ctx, period)
	}
}

// PodState is what the runner knows of one pod: its slot and its
// containers' podman names, restarts and readiness.
type PodState struct {
	Pod      string            `json:"pod"`
	Labels   map[string]string `json:"labels,omitempty"` // the pod's, as the runner started it
	Slot     int               `json:"slot"`
	Ready    bool              `json:"ready"`
	Restarts int32             `json:"restarts"`
	Names    map[string]string `json:"names"` // container -> podman name
}

// Pods reports the pods the runner runs.
func (r *Runner) Pods() []PodState {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []PodState
	for _, rp := range r.pods {
		s := PodState{Pod: rp.pod.Name, Labels: rp.pod.Labels, Slot: rp.slot, Ready: rp.ready(), Names: map[string]string{}}
		rp.mu.Lock()
		for _, c := range rp.pod.Spec.Containers {
			if st, ok := rp.containers[c.Name]; ok {
				s.Restarts += st.restarts.Load()
				s.Names[c.Name] = st.name
			}
		}
		rp.mu.Unlock()
		out = append(out, s)
	}
	return out
}

// Kill sends SIGKILL to a container of the named pod, as a node failure or
// OOM kill would; the runner restarts it like a kubelet.
func (r *Runner) Kill(pod, containerName string) error {
	for _, s := range r.Pods() {
		if s.Pod == pod {
			args := Podman("kill", "--signal", "KILL", s.Names[containerName])
			if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
				return fmt.Errorf("%w: %s", err, out)
			}
			return nil
		}
	}
	return fmt.Errorf("pod %s is not running", pod)
}

// LogFile is where the output of a pod's container goes.
func (r *Runner) LogFile(pod, containerName string) string {
	return filepath.Join(r.cfg.Dir, pod+"_"+containerName+".log")
}

// LogFiles lists the container log files written so far.
func (r *Runner) LogFiles() []string {
	files, _ := filepath.Glob(filepath.Join(r.cfg.Dir, "*.log"))
	return files
}

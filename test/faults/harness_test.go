package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/test/bench"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/framework/testutil"
)

const (
	operatorNS = bench.OperatorNamespace
	// operandNS is the OperatorConfig's default guestbook.namespace.
	operandNS = "guestbook"
)

// managerArgs: one worker per controller, so that the order of the writes
// repeats from run to run, and Lease timings short enough that a fresh
// manager takes the Lease of a killed one within about 2 s. No webhook
// drain: every trial ends with a graceful stop, which the drain made 3 s
// longer (a minute of each suite's time), and a trial never stops a manager
// gracefully while the API server calls it (the drain's own tests are
// internal/webhookdrain's, TestLeaseReleasedBeforeDrain and the e2e
// rollouts).
var managerArgs = []string{
	"--leader-elect-lease-duration=2s", "--leader-elect-renew-deadline=1500ms", "--leader-elect-retry-period=500ms",
	"--webhook-drain-period=0s",
}

// harness is one API server, the proxy in front of it, and the manager
// binary run as a process behind the proxy, one at a time.
type harness struct {
	t     *testing.T
	ctx   context.Context
	c     client.Client
	proxy *Proxy
	dir   string
	bin   string
	kcfg  string
	port  int

	mu     sync.Mutex
	mgr    *bench.Manager
	starts int
	// killed is closed when the armed crash has happened and a fresh
	// manager has been started.
	killed chan struct{}
}

// newHarness starts an API server with the project's CRDs and webhooks
// (pointed at localhost, which the manager's own certificates name), the
// proxy, and builds the manager binary.
func newHarness(t *testing.T) *harness {
	t.Helper()
	// The admin client's own warnings only; the manager logs to its file.
	ctrllog.SetLogger(logr.Discard())
	dir := t.TempDir()
	if keep := os.Getenv("FAULTS_LOG_DIR"); keep != "" {
		// The managers' logs stay there after the test, for a failure's
		// post-mortem.
		dir = keep
	}
	// FAULTS_MANAGER runs another build of the manager (one with a
	// planted bug, to see the tests fail).
	bin := testenv.ManagerBinary(t, "FAULTS_MANAGER")
	env, cfg, c := testenv.Start(t, testenv.Options{Webhooks: true, WebhookHost: "localhost"})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, ns := range []string{operatorNS, operandNS} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Create(ctx, &operatorv1alpha1.OperatorConfig{ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: names.CertSecret}}); err != nil {
		t.Fatal(err)
	}
	p, err := NewProxy(cfg, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	kcfg := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kcfg, p.Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, ctx: ctx, c: c, proxy: p, dir: dir, bin: bin, kcfg: kcfg, port: env.WebhookInstallOptions.LocalServingPort}
	t.Cleanup(h.stop)
	return h
}

// start starts a fresh manager process (the lock held).
func (h *harness) startLocked() {
	h.starts++
	probe, err := testutil.FreeLoopbackPort()
	if err != nil {
		h.t.Error(err)
		return
	}
	m, err := bench.StartManager(bench.ManagerOptions{
		Binary: h.bin, Kubeconfig: h.kcfg, LogFile: filepath.Join(h.dir, fmt.Sprintf("manager-%d.log", h.starts)),
		WebhookPort: h.port, ProbePort: probe, MaxConcurrentReconciles: 1, LeaderElect: true, ExtraArgs: managerArgs,
	})
	if err != nil {
		h.t.Error(err)
		return
	}
	h.mgr = m
}

// current returns the manager process running now.
func (h *harness) current() *bench.Manager {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mgr
}

// waitReady waits until the manager running now (a fresh one, should the
// crash have come first) is ready.
func (h *harness) waitReady() {
	deadline := time.Now().Add(90 * time.Second)
	for {
		m := h.current()
		err := m.WaitReady(h.ctx, time.Until(deadline))
		if err == nil {
			return
		}
		if m == h.current() || time.Now().After(deadline) {
			h.t.Fatalf("manager not ready: %v", err)
		}
	}
}

// killNow SIGKILLs the manager, waits until it is gone, and starts a fresh
// one; the proxy calls it right after the armed write landed.
func (h *harness) killNow() {
	h.mu.Lock()
	defer h.mu.Unlock()
	_ = h.mgr.Signal(syscall.SIGKILL)
	h.mgr.Stop()
	h.startLocked()
	if h.killed != nil {
		close(h.killed)
		h.killed = nil
	}
}

// stop ends the manager with SIGTERM, so that it releases the Lease.
func (h *harness) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mgr != nil {
		h.mgr.Stop()
		h.mgr = nil
	}
}

// resetCertificates empties the certificate Secret, so that every trial's
// manager writes its certificates and injects its CA anew, as the first
// start in a cluster does: those writes are crash points too.
func (h *harness) resetCertificates() {
	s := &corev1.Secret{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: operatorNS, Name: names.CertSecret}, s); err != nil {
		h.t.Fatal(err)
	}
	s.Data = nil
	if err := h.c.Update(h.ctx, s); err != nil {
		h.t.Fatal(err)
	}
}

// fault is what a trial does to the manager.
type fault struct {
	// killAfter SIGKILLs the manager right after the write with that
	// identity (writeIDs; "": never).
	killAfter string
	// perturb applies to every watch of the trial.
	perturb Perturbation
	// recordAt restarts the manager (SIGKILL) before that scenario step
	// and records the lists its informers start from; staleRestart
	// restarts it again right after that later step's user action was
	// accepted, its informers answered from those recorded lists, older
	// than the API server by the steps in between (0: never).
	recordAt, staleRestart int
	// staleHold keeps the restarted manager's informers on the recorded
	// state this long before the watch from there delivers anything.
	staleHold time.Duration
}

// result is one trial.
type result struct {
	writes   []Write
	snapshot []string
	diff     string
	killed   bool
	took     time.Duration
	stale    []string
	// staleAt is the API server's resourceVersion when the stale restart
	// happened, to compare with the recorded lists' (stale).
	staleAt string
}

// trial runs the scenario once, in fresh names, under f, and returns the
// final state and the writes the manager made until the scenario ended.
func (h *harness) trial(n int, f fault, want []string) result {
	h.t.Helper()
	start := time.Now()
	h.proxy.Reset()
	h.resetCertificates()
	h.proxy.Perturb(f.perturb)
	killed := make(chan struct{})
	h.mu.Lock()
	h.killed = killed
	h.startLocked()
	h.mu.Unlock()
	if f.killAfter != "" {
		ids := newWriteIDs(n)
		h.proxy.KillAfter(func(w Write) bool { return ids.next(w) == f.killAfter }, h.killNow)
	}
	h.waitReady()
	s := newScenario(h, n)
	// After a step that never converged, the final state is only looked
	// at, not waited for.
	settleFor := stepTimeout
	var staleAt string
	for i, step := range s.steps() {
		if f.recordAt == i+1 {
			h.t.Logf("trial %d: SIGKILL before step %d (%s); the fresh manager's lists are recorded", n, i+1, step.name)
			h.proxy.Record()
			h.killNow()
		}
		var accepted func()
		if f.staleRestart == i+1 {
			accepted = func() {
				served := h.proxy.ServeStale(f.staleHold)
				// The API server's resourceVersion now, to compare with the
				// recorded lists' (logged by the proxy).
				now := &corev1.ConfigMapList{}
				_ = h.c.List(h.ctx, now, client.InNamespace(operandNS), client.Limit(1))
				staleAt = now.ResourceVersion
				h.t.Logf("trial %d: SIGKILL after the action of step %d (%s); %d recorded lists answer the fresh manager; the API server is at resourceVersion %s",
					n, i+1, step.name, served, now.ResourceVersion)
				h.killNow()
			}
		}
		if why := s.run(step, accepted); why != "" {
			h.t.Errorf("trial %d, step %d (%s): %s", n, i+1, step.name, why)
			settleFor = 5 * time.Second
			break
		}
	}
	// A kill after the step's last write may still be on its way: the
	// final state is the fresh manager's after it.
	h.proxy.AwaitKill()
	r := result{writes: h.proxy.Writes(), staleAt: staleAt}
	// The final state: settled, then compared with the fault-free one.
	r.snapshot, r.diff = s.settle(want, settleFor)
	// No crash during the cleanup: a trial whose writes ran out before k
	// says so instead.
	h.proxy.KillAfter(nil, nil)
	select {
	case <-killed:
		r.killed = true
	default:
	}
	r.stale = h.proxy.StaleServed()
	r.took = time.Since(start)
	h.proxy.Perturb(Perturbation{})
	s.cleanup()
	h.stop()
	return r
}

// diffLines lists the lines only one of want and got has.
func diffLines(want, got []string) string {
	var out []string
	for _, l := range want {
		if !slices.Contains(got, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range got {
		if !slices.Contains(want, l) {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// writeIDs names a trial's writes the same in every trial: the verb, the
// path with the trial's namespace and Guestbook name replaced and an
// event's generated suffix dropped, and which occurrence of that verb and
// path it is.
type writeIDs struct {
	ns, gb string
	seen   map[string]int
}

func newWriteIDs(n int) *writeIDs {
	return &writeIDs{ns: trialNamespace(n), gb: trialGuestbook(n), seen: map[string]int{}}
}

var eventSuffix = regexp.MustCompile(`\.[0-9a-f]{16}$`)

// next returns the identity of w, the next write of the trial.
func (ids *writeIDs) next(w Write) string {
	path := strings.ReplaceAll(strings.ReplaceAll(w.Path, ids.ns, "NS"), ids.gb, "GB")
	path = eventSuffix.ReplaceAllString(path, "")
	key := w.Verb + " " + path
	ids.seen[key]++
	return fmt.Sprintf("%s #%d", key, ids.seen[key])
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

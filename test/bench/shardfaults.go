package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/scheme"
	"github.com/example/myoperator/internal/shard"
	"github.com/example/myoperator/test/framework/shardaudit"
)

// probeNS holds the probe Drinks of a kill run, apart from the N Drinks.
const probeNS = "bench-probes"

// Audit is what shardaudit found in a run's audit log: the writes of the
// replicas to Drinks' status and ConfigMaps it checked, admitted or
// possibly applied (Uncertain: answered with a server error or none, and
// MaybeStale: of those, the ones from a replica without the bucket), the
// objects written by more than one replica (across handovers, expected),
// the writes from a replica that did not hold the Drink's bucket when the
// request arrived (double writes: want 0) with the first few described,
// and the writes the API server refused.
type Audit struct {
	Written, ByTwo, Stale int
	Uncertain, MaybeStale int      `json:",omitempty"`
	StaleFirst            []string `json:",omitempty"`
	Refused               int
}

func (a *Audit) add(r shardaudit.Result) {
	a.Written += r.Written
	a.ByTwo += r.ByTwo
	a.Uncertain += r.Uncertain
	a.MaybeStale += len(r.MaybeStale)
	a.Stale += len(r.Stale)
	for _, s := range r.Stale {
		if len(a.StaleFirst) < 5 {
			a.StaleFirst = append(a.StaleFirst, s)
		}
	}
	for _, n := range r.Refused {
		a.Refused += n
	}
}

// Latency summarizes the seconds from a probe Drink's create until the
// bench saw it Ready at its generation.
type Latency struct {
	Count          int
	P50, P99, Max  float64
	Over2s, Over5s int
}

func latencyOf(xs []float64) Latency {
	l := Latency{Count: len(xs)}
	if len(xs) == 0 {
		return l
	}
	l.P50, l.P99, l.Max = Percentile(xs, 50), Percentile(xs, 99), slices.Max(xs)
	for _, x := range xs {
		if x > 2 {
			l.Over2s++
		}
		if x > 5 {
			l.Over5s++
		}
	}
	return l
}

// ProbeSample is one probe Drink of a kill run.
type ProbeSample struct {
	At, Seconds float64
	Bucket      int
	Range       string // before, kept, moved, killed
}

// ShardKill is one SIGKILL of a replica among Replicas that share N
// converged Drinks, with probe Drinks created at ProbeRate a second from
// before the kill until well after its buckets were taken over.
type ShardKill struct {
	Date        string
	N, Replicas int
	Workers     int
	ProbeRate   float64
	Seconds     float64 // the N Drinks' convergence, before the kill
	// Steady are the API writes in the Window after convergence (Leases
	// left out), before the probes start.
	Steady          Writes
	KilledBuckets   int
	KilledWasLeader bool
	// TakeoverSeconds: from the SIGKILL until no bucket Lease names the
	// killed replica and every bucket is held. RecoverSeconds: until the
	// last probe Drink created in its buckets between the kill and the
	// takeover was Ready: its range reconciled by the others.
	TakeoverSeconds, RecoverSeconds float64
	// The probes' latency before the kill (Baseline), and after it in the
	// buckets a survivor kept (Others), in those the new assignment moved
	// from one survivor to another (Moved; earlier records count them in
	// Others) and in the killed replica's (Killed).
	Baseline, Others, Moved, Killed Latency
	// Probes are every probe: its create in seconds from the kill, its
	// latency, its bucket and which of the above it counts in.
	Probes []ProbeSample
	// ProbeRetries are the probe creates that failed (a webhook call
	// to the killed replica under way) and were tried again.
	ProbeRetries int `json:",omitempty"`
	Audit        Audit
	MemoryLimit  float64
	// Restarts are the replicas that exited without the bench asking
	// and were started again (shardReplicas).
	Restarts []string `json:",omitempty"`
	// Profiled is how long CPU profiles of the API server and the
	// survivors were recorded from killProfileDelay after the kill
	// (-profile), which costs them some CPU; 0 for none.
	Profiled float64 `json:",omitempty"`
	// TerminatedWatchers are the watches the API server closed on its
	// side between just before the kill and the probes' end
	// (apiserver_terminated_watchers_total: a watcher that fell behind
	// its events); nil in records from before it was kept. The two
	// scrapes are kept in the run's directory.
	TerminatedWatchers *float64 `json:",omitempty"`
	// API is what the API server did between the same two scrapes, by
	// kind of request, webhook, priority level and resource (APIWindow);
	// nil in records from before it was kept.
	API *APIWindow `json:",omitempty"`
	// ManagerFlags were added to every replica's flags (-manager-flag):
	// an A/B of one setting, which the figures never mix with the
	// install's own (hack/benchdoc/benchfig).
	ManagerFlags []string `json:",omitempty"`
}

// ShardScale is one run of N Drinks created while the replicas are scaled
// through Steps (1, 4, 2, 1), each change after an equal part of the
// creates, as a Deployment's scale would: new replicas started, surplus
// ones ended with SIGTERM.
type ShardScale struct {
	Date    string
	N       int
	Workers int
	Steps   []int
	// Seconds from the first create until every Drink was Ready at its
	// generation with its ConfigMap.
	Seconds float64
	// Rebalance is, per change, the seconds until the bucket Leases were
	// held as the new set of replicas assigns them.
	Rebalance   []float64
	Audit       Audit
	MemoryLimit float64
	// Restarts are the replicas that exited without the bench asking
	// and were started again (shardReplicas).
	Restarts []string `json:",omitempty"`
}

// shardReplicas starts and stops the replicas of a run, each with its own
// identity, ports and log, behind one webhookService. A replica that exits
// without the bench asking (one that lost its leader election Lease to a
// loaded API server exits, as controller-runtime's managers do) is started
// again as a kubelet would restart its container, and the restart is
// recorded; one the bench kills stays down.
type shardReplicas struct {
	// single runs them as one leader without --shard-drinks (the
	// default install).
	single  bool
	cfg     Config
	cp      *ControlPlane
	dir     string
	limit   int64
	service *webhookService
	began   time.Time

	mu          sync.Mutex
	running     map[int]*Manager
	kubeconfigs map[int]string
	restarts    []string
	// restarted counts each replica's restarts (its log file names).
	restarted map[int]int
	// stopped: stopAll has run, so an exit is not restarted.
	stopped bool
}

func (r *shardReplicas) id(i int) string { return "bench-" + strconv.Itoa(i) }

// webhookPort is replica i's own webhook port, behind r.service; without
// a Service the first replica serves the webhooks where the API server
// calls them.
func (r *shardReplicas) webhookPort(i int) int {
	if r.service == nil && i == 0 {
		return WebhookPort
	}
	return r.cfg.BasePort + 30 + i
}

// start starts replicas is and waits until each is ready.
func (r *shardReplicas) start(ctx context.Context, is ...int) error {
	var started []*Manager
	for _, i := range is {
		m, err := r.launch(ctx, i)
		if err != nil {
			return err
		}
		started = append(started, m)
	}
	for n, m := range started {
		if err := m.WaitReady(ctx, 2*time.Minute); err != nil {
			return err
		}
		r.serve(is[n], m)
	}
	return nil
}

// launch starts replica i (its Pod and token made the first time only)
// and watches it for an exit it was not asked for; serve adds it to the
// webhook Service once it is ready.
func (r *shardReplicas) launch(ctx context.Context, i int) (*Manager, error) {
	id := r.id(i)
	r.mu.Lock()
	kubeconfig, ok := r.kubeconfigs[i]
	r.mu.Unlock()
	if !ok {
		var err error
		if kubeconfig, err = r.cp.PodKubeconfig(ctx, r.dir, id); err != nil {
			return nil, err
		}
	}
	reconciles := 16
	if len(r.cfg.Reconciles) > 0 {
		reconciles = r.cfg.Reconciles[0]
	}
	o := ManagerOptions{
		Binary: r.cfg.Manager, Kubeconfig: kubeconfig, LogFile: filepath.Join(r.dir, id+".log"),
		WebhookPort: r.webhookPort(i),
		MetricsPort: r.cfg.BasePort + 3*i, ProbePort: r.cfg.BasePort + 3*i + 1, PprofPort: r.cfg.BasePort + 3*i + 2,
		MaxConcurrentReconciles: reconciles, LeaderElect: true, MemoryLimit: r.limit,
		ExtraArgs: append([]string{"--pod-name=" + id}, r.cfg.ManagerFlags...),
	}
	r.mu.Lock()
	if n := r.restarted[i]; n > 0 {
		// Keep the log of the run that exited.
		o.LogFile = filepath.Join(r.dir, fmt.Sprintf("%s.restart-%d.log", id, n))
	}
	r.mu.Unlock()
	if !r.single {
		o.ExtraArgs = append(o.ExtraArgs, "--shard-drinks")
	}
	m, err := StartManager(o)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.stopped {
		// stopAll ran while this one started: it would be left running.
		r.mu.Unlock()
		m.Stop()
		return nil, fmt.Errorf("replica %s started after the replicas were stopped", id)
	}
	r.running[i] = m
	r.kubeconfigs[i] = kubeconfig
	r.mu.Unlock()
	go r.supervise(ctx, i, m)
	return m, nil
}

// serve adds replica i to the webhook Service once m is ready (the
// caller waits for that), as a Service's endpoints follow its pods'
// readiness, unless m was taken or exited meanwhile.
func (r *shardReplicas) serve(i int, m *Manager) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running[i] != m || r.stopped {
		return
	}
	if err := r.service.add(r.webhookPort(i)); err != nil {
		r.cfg.Logf("adding %s to the webhook Service: %v", r.id(i), err)
	}
}

// unserve removes replica i from the webhook Service.
func (r *shardReplicas) unserve(i int) {
	if err := r.service.remove(r.webhookPort(i)); err != nil {
		r.cfg.Logf("removing %s from the webhook Service: %v", r.id(i), err)
	}
}

// supervise restarts replica i if m exits while it is still meant to run.
func (r *shardReplicas) supervise(ctx context.Context, i int, m *Manager) {
	select {
	case <-ctx.Done():
		return
	case <-m.Exited():
	}
	exit := m.Wait(time.Second)
	r.mu.Lock()
	unasked := r.running[i] == m && !r.stopped
	if unasked {
		delete(r.running, i)
		r.restarted[i]++
		r.restarts = append(r.restarts, fmt.Sprintf("%s exited at %.0f s (%v), started again", r.id(i), time.Since(r.began).Seconds(), exit))
	}
	r.mu.Unlock()
	if !unasked {
		return
	}
	r.unserve(i)
	r.cfg.Logf("replica %s exited unasked (%v; see %s); starting it again", r.id(i), exit, m.opts.LogFile)
	again, err := r.launch(ctx, i)
	if err != nil {
		r.cfg.Logf("starting %s again: %v", r.id(i), err)
		return
	}
	if err := again.WaitReady(ctx, 2*time.Minute); err != nil {
		r.cfg.Logf("%s started again: %v", r.id(i), err)
		return
	}
	r.serve(i, again)
}

// take removes replica i from the running set and the webhook Service, so
// that its exit counts as asked for.
func (r *shardReplicas) take(i int) *Manager {
	r.mu.Lock()
	m := r.running[i]
	delete(r.running, i)
	r.mu.Unlock()
	r.unserve(i)
	return m
}

// stop ends replicas is with SIGTERM, all at once, and waits for them.
func (r *shardReplicas) stop(is ...int) {
	var wg sync.WaitGroup
	for _, i := range is {
		if m := r.take(i); m != nil {
			wg.Go(m.Stop)
		}
	}
	wg.Wait()
}

// kill ends replica i with SIGKILL and waits for it to exit.
func (r *shardReplicas) kill(i int) error {
	m := r.take(i)
	if m == nil {
		return fmt.Errorf("replica %s is not running", r.id(i))
	}
	if err := m.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	_ = m.Wait(10 * time.Second)
	return nil
}

// killProfileDelay is when, after a SIGKILL, the kill run's CPU profiles
// (-profile) start: about when the member Lease of the killed replica
// expires and the survivors take its buckets.
const killProfileDelay = 12 * time.Second

// profileAfter records CPU profiles of the API server and of every
// running replica for d, starting after delay, into dir with prefix; the
// function it returns waits for them. It is for finding what a missed
// target waits on, as profileCPU is.
func (r *shardReplicas) profileAfter(ctx context.Context, dir, prefix string, delay, d time.Duration) func() error {
	done := make(chan error, 1)
	go func() {
		select {
		case <-ctx.Done():
			done <- ctx.Err()
			return
		case <-time.After(delay):
		}
		r.mu.Lock()
		ms := map[string]*Manager{}
		for i, m := range r.running {
			ms[r.id(i)] = m
		}
		r.mu.Unlock()
		done <- profileCPUOf(ctx, r.cp, ms, dir, prefix, d)()
	}()
	return func() error { return <-done }
}

// manager is replica i's running manager.
func (r *shardReplicas) manager(i int) (*Manager, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.running[i]; m != nil {
		return m, nil
	}
	return nil, fmt.Errorf("replica %s is not running", r.id(i))
}

func (r *shardReplicas) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for i := range r.running {
		out = append(out, r.id(i))
	}
	slices.Sort(out)
	return out
}

// Restarts are the replicas started again after an exit not asked for.
func (r *shardReplicas) Restarts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.restarts)
}

// stopAll stops every replica and then the webhook Service; a replica
// that exits meanwhile is not started again.
func (r *shardReplicas) stopAll() {
	r.mu.Lock()
	r.stopped = true
	var is []int
	for i := range r.running {
		is = append(is, i)
	}
	r.mu.Unlock()
	r.stop(is...)
	_ = r.service.Close()
}

// startShardRun starts the control plane of a run, and the replicas'
// bookkeeping (none runs yet).
func startShardRun(ctx context.Context, cfg Config, dir string, p shardPlane, limit int64) (*ControlPlane, *shardReplicas, error) {
	cp, err := startShardPlane(ctx, cfg, dir, p)
	if err != nil {
		return nil, nil, err
	}
	var svc *webhookService
	if !p.DirectWebhooks {
		if svc, err = serveWebhooks(WebhookPort); err != nil {
			cp.Stop()
			return nil, nil, fmt.Errorf("serving the webhooks on %d: %w", WebhookPort, err)
		}
	}
	return cp, &shardReplicas{cfg: cfg, cp: cp, dir: dir, limit: limit, service: svc, began: time.Now(),
		running: map[int]*Manager{}, kubeconfigs: map[int]string{}, restarted: map[int]int{}}, nil
}

// writesFor counts the API writes (Leases left out) over d.
func (cp *ControlPlane) writesFor(ctx context.Context, d time.Duration) (Writes, error) {
	before, err := cp.APIMetrics(ctx)
	if err != nil {
		return nil, err
	}
	time.Sleep(d)
	after, err := cp.APIMetrics(ctx)
	if err != nil {
		return nil, err
	}
	return writesOf(after).Minus(writesOf(before)), nil
}

// bucketHolders reads the holder of each bucket ("" for none).
func bucketHolders(ctx context.Context, c client.Client) ([]string, error) {
	list := &coordinationv1.LeaseList{}
	if err := c.List(ctx, list, client.InNamespace(OperatorNamespace), client.HasLabels{shard.BucketLabel}); err != nil {
		return nil, err
	}
	holders := make([]string, shard.Buckets)
	for _, l := range list.Items {
		if b, ok := shard.ParseBucket(l.Labels[shard.BucketLabel]); ok && l.Name == shard.BucketLeaseName(b) {
			holders[b] = ptr.Deref(l.Spec.HolderIdentity, "")
		}
	}
	return holders, nil
}

// waitAssigned waits until the bucket Leases are held as ids assign them.
func waitAssigned(ctx context.Context, c client.Client, ids []string, timeout time.Duration) error {
	want := make([]string, shard.Buckets)
	for id, bs := range shard.Assign(ids) {
		for _, b := range bs {
			want[b] = id
		}
	}
	err := poll(ctx, time.Now().Add(timeout), 100*time.Millisecond, func() (bool, error) {
		got, err := bucketHolders(ctx, c)
		return err == nil && slices.Equal(got, want), err
	})
	if err != nil {
		return fmt.Errorf("the buckets are not held as %v assign them: %w", ids, err)
	}
	return nil
}

// RunShardKill measures a SIGKILL of one of k replicas sharing cfg.N
// converged Drinks.
func RunShardKill(ctx context.Context, cfg Config, k, workers int, limit int64) (ShardKill, error) {
	run := ShardKill{Date: time.Now().UTC().Format(time.RFC3339), N: cfg.N, Replicas: k, Workers: workers, ProbeRate: 10, MemoryLimit: float64(limit), ManagerFlags: cfg.ManagerFlags}
	if k < 2 {
		return run, fmt.Errorf("a kill needs at least 2 replicas, not %d", k)
	}
	dir := filepath.Join(cfg.WorkDir, fmt.Sprintf("n%d-shard-kill-k%d", cfg.N, k))
	cfg.Logf("N=%d kill 1 of %d: starting kube-apiserver and etcd", cfg.N, k)
	cp, reps, err := startShardRun(ctx, cfg, dir, shardPlane{Gate: true, Audit: true, Fence: true}, limit)
	if err != nil {
		return run, err
	}
	defer cp.Stop()
	defer reps.stopAll()
	if err := reps.start(ctx, upToSlice(k)...); err != nil {
		return run, err
	}
	if err := waitAssigned(ctx, cp.Client, reps.ids(), 2*time.Minute); err != nil {
		return run, err
	}
	for _, ns := range []string{drinkNS, probeNS} {
		if err := cp.CreateNamespace(ctx, ns); err != nil {
			return run, err
		}
	}
	if run.Seconds, _, err = createConverged(ctx, cp, cfg.N, workers); err != nil {
		return run, err
	}
	cfg.Logf("N=%d kill 1 of %d: converged in %.1fs; counting writes for %s", cfg.N, k, run.Seconds, cfg.Window)
	if run.Steady, err = cp.writesFor(ctx, cfg.Window); err != nil {
		return run, err
	}
	cfg.Logf("N=%d kill 1 of %d: steady writes %s; probing", cfg.N, k, run.Steady)

	holders, err := bucketHolders(ctx, cp.Client)
	if err != nil {
		return run, err
	}
	victim := k - 1
	victimID := reps.id(victim)
	for _, h := range holders {
		if h == victimID {
			run.KilledBuckets++
		}
	}
	leader := &coordinationv1.Lease{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: OperatorNamespace, Name: LeaseName}, leader); err == nil {
		run.KilledWasLeader = strings.HasPrefix(ptr.Deref(leader.Spec.HolderIdentity, ""), victimID+"_")
	}
	pw, err := watchProbes(ctx, cp.Config)
	if err != nil {
		return run, err
	}
	probeCtx, stopProbes := context.WithCancel(ctx)
	probesDone := make(chan error, 1)
	go func() { probesDone <- pw.create(probeCtx, cp.Client, run.ProbeRate) }()
	time.Sleep(20 * time.Second)
	// What the API server did meanwhile, for reading after the run (the
	// record keeps the terminated watchers): a failed scrape costs the
	// diagnosis, not the run.
	apiBefore, errBefore := cp.SaveAPIMetrics(ctx, filepath.Join(dir, "kill-apiserver-metrics-before.txt"))
	kill := time.Now()
	if err := reps.kill(victim); err != nil {
		stopProbes()
		return run, err
	}
	profiled := func() error { return nil }
	if cfg.ProfileFor > 0 {
		profiled = reps.profileAfter(ctx, dir, "kill-", killProfileDelay, cfg.ProfileFor)
		run.Profiled = cfg.ProfileFor.Seconds()
	}
	err = poll(ctx, time.Now().Add(5*time.Minute), 100*time.Millisecond, func() (bool, error) {
		hs, err := bucketHolders(ctx, cp.Client)
		if err != nil {
			return false, err
		}
		return !slices.Contains(hs, victimID) && !slices.Contains(hs, ""), nil
	})
	if err != nil {
		stopProbes()
		return run, fmt.Errorf("the killed replica's buckets were not taken over: %w", err)
	}
	takeover := time.Now()
	run.TakeoverSeconds = takeover.Sub(kill).Seconds()
	cfg.Logf("N=%d kill 1 of %d: %d buckets taken over in %.1fs; probing 30s more", cfg.N, k, run.KilledBuckets, run.TakeoverSeconds)
	time.Sleep(30 * time.Second)
	stopProbes()
	if err := <-probesDone; err != nil {
		return run, err
	}
	probes, err := pw.wait(ctx, 5*time.Minute)
	if err != nil {
		return run, err
	}
	if err := profiled(); err != nil {
		cfg.Logf("N=%d kill 1 of %d: CPU profiles: %v", cfg.N, k, err)
	}
	apiAfter, errAfter := cp.SaveAPIMetrics(ctx, filepath.Join(dir, "kill-apiserver-metrics-after.txt"))
	if err := errors.Join(errBefore, errAfter); err != nil {
		cfg.Logf("N=%d kill 1 of %d: the API server's metrics: %v", cfg.N, k, err)
	} else {
		const terminated = "apiserver_terminated_watchers_total"
		run.TerminatedWatchers = ptr.To(apiAfter.Sum(terminated, nil) - apiBefore.Sum(terminated, nil))
		run.API = ptr.To(apiWindow(apiBefore, apiAfter))
		cfg.Logf("N=%d kill 1 of %d: the API server in the window: %.1f s of CPU (%.1f s in its collector); requests %+v; webhooks %+v; queues %+v; consistent reads %+v; event delivery %+v; conversions %+v; lists from etcd %+v",
			cfg.N, k, run.API.CPUSeconds, run.API.GCCPUSeconds, run.API.Requests, run.API.Webhooks, run.API.QueueWaits, run.API.CacheReadWaits, run.API.EventDelivery,
			run.API.Conversions, run.API.StorageLists)
	}
	pw.mu.Lock()
	run.ProbeRetries = pw.retried
	pw.mu.Unlock()
	after, err := bucketHolders(ctx, cp.Client)
	if err != nil {
		return run, err
	}
	var before, others, moved, killed []float64
	for _, p := range probes {
		lat := p.ready.Sub(p.created).Seconds()
		b := shard.BucketOf(p.uid)
		sample := ProbeSample{At: p.created.Sub(kill).Seconds(), Seconds: lat, Bucket: b}
		switch {
		case p.created.Before(kill):
			before = append(before, lat)
			sample.Range = "before"
		case holders[b] == victimID:
			killed = append(killed, lat)
			sample.Range = "killed"
			if p.created.Before(takeover) {
				run.RecoverSeconds = max(run.RecoverSeconds, p.ready.Sub(kill).Seconds())
			}
		case after[b] != holders[b]:
			// The new assignment moved it between two survivors.
			moved = append(moved, lat)
			sample.Range = "moved"
		default:
			others = append(others, lat)
			sample.Range = "kept"
		}
		run.Probes = append(run.Probes, sample)
	}
	slices.SortFunc(run.Probes, func(a, b ProbeSample) int { return cmp.Compare(a.At, b.At) })
	run.Baseline, run.Others, run.Moved, run.Killed = latencyOf(before), latencyOf(others), latencyOf(moved), latencyOf(killed)
	run.Audit, err = auditRun(ctx, cp, dir, kill.Add(-5*time.Second))
	if err != nil {
		return run, err
	}
	run.Restarts = reps.Restarts()
	cfg.Logf("N=%d kill 1 of %d: takeover %.1fs, recovered %.1fs; probes p99 before %.2fs, others %.2fs (max %.2fs), killed range %.2fs; %d probe creates retried; restarts %v; audit %+v; watches the API server closed %v",
		cfg.N, k, run.TakeoverSeconds, run.RecoverSeconds, run.Baseline.P99, run.Others.P99, run.Others.Max, run.Killed.P99, run.ProbeRetries, run.Restarts, run.Audit, ptr.Deref(run.TerminatedWatchers, -1))
	return run, nil
}

// RunShardScale measures cfg.N Drinks created while the replicas are
// scaled through steps.
func RunShardScale(ctx context.Context, cfg Config, steps []int, workers int, limit int64) (ShardScale, error) {
	run := ShardScale{Date: time.Now().UTC().Format(time.RFC3339), N: cfg.N, Workers: workers, Steps: steps, MemoryLimit: float64(limit)}
	if len(steps) < 2 || slices.Min(steps) < 1 {
		return run, fmt.Errorf("scale steps %v: want at least two counts of at least 1", steps)
	}
	dir := filepath.Join(cfg.WorkDir, fmt.Sprintf("n%d-shard-scale", cfg.N))
	cfg.Logf("N=%d scale %v: starting kube-apiserver and etcd", cfg.N, steps)
	cp, reps, err := startShardRun(ctx, cfg, dir, shardPlane{Gate: true, Audit: true, Fence: true}, limit)
	if err != nil {
		return run, err
	}
	defer cp.Stop()
	defer reps.stopAll()
	began := time.Now()
	if err := reps.start(ctx, upToSlice(steps[0])...); err != nil {
		return run, err
	}
	if err := waitAssigned(ctx, cp.Client, reps.ids(), 2*time.Minute); err != nil {
		return run, err
	}
	if err := cp.CreateNamespace(ctx, drinkNS); err != nil {
		return run, err
	}
	wait, err := watchConvergence(ctx, cp.Config, drinkNS, cfg.N, 4*time.Hour)
	if err != nil {
		return run, err
	}
	var created atomic.Int64
	start := time.Now()
	loadDone := make(chan Load, 1)
	go func() {
		loadDone <- runWorkers(ctx, workers, upTo(cfg.N), func(ctx context.Context, i int) error {
			err := cp.Client.Create(ctx, newDrink(drinkNS, i))
			created.Add(1)
			return err
		})
	}()
	cur := steps[0]
	for s, to := range steps[1:] {
		at := int64(cfg.N * (s + 1) / len(steps))
		if err := poll(ctx, time.Now().Add(4*time.Hour), 100*time.Millisecond, func() (bool, error) { return created.Load() >= at, nil }); err != nil {
			return run, err
		}
		changed := time.Now()
		switch {
		case to > cur:
			var add []int
			for i := cur; i < to; i++ {
				add = append(add, i)
			}
			if err := reps.start(ctx, add...); err != nil {
				return run, err
			}
		case to < cur:
			var drop []int
			for i := to; i < cur; i++ {
				drop = append(drop, i)
			}
			reps.stop(drop...)
		}
		if err := waitAssigned(ctx, cp.Client, reps.ids(), 5*time.Minute); err != nil {
			return run, err
		}
		secs := time.Since(changed).Seconds()
		run.Rebalance = append(run.Rebalance, secs)
		cfg.Logf("N=%d scale %d -> %d after %d creates: rebalanced in %.1fs", cfg.N, cur, to, at, secs)
		cur = to
	}
	if load := <-loadDone; load.FirstErr != nil {
		return run, fmt.Errorf("creating Drinks: %d of %d failed, first: %w", load.Errors, cfg.N, load.FirstErr)
	}
	converged, err := wait()
	if err != nil {
		return run, err
	}
	run.Seconds = converged.Sub(start).Seconds()
	if run.Audit, err = auditRun(ctx, cp, dir, began); err != nil {
		return run, err
	}
	run.Restarts = reps.Restarts()
	cfg.Logf("N=%d scale %v: converged in %.1fs, rebalances %v s; audit %+v", cfg.N, steps, run.Seconds, run.Rebalance, run.Audit)
	return run, nil
}

// auditRun replays the audit log of the run in dir from from on: the
// writes to the Drinks of drinkNS and probeNS against every bucket Lease
// write since the start.
func auditRun(ctx context.Context, cp *ControlPlane, dir string, from time.Time) (Audit, error) {
	events, err := shardaudit.ReadWhere(AuditLog(dir), func(e *auditv1.Event) bool {
		return shardaudit.IsBucketLease(e) || !e.StageTimestamp.Time.Before(from)
	})
	if err != nil {
		return Audit{}, err
	}
	var a Audit
	for _, ns := range []string{drinkNS, probeNS} {
		uids, err := drinkUIDs(ctx, cp.Client, ns)
		if err != nil {
			return a, err
		}
		a.add(shardaudit.Replay(events, OperatorNamespace, ns, uids))
	}
	if a.Stale == 0 && a.MaybeStale == 0 {
		// Nothing in it to look into, and at 200,000 Drinks it is over
		// a gigabyte: a few runs filled a developer's disk. The API
		// server writes on to the unlinked file until it stops. A log
		// with a stale write stays for its reader.
		if err := os.Remove(AuditLog(dir)); err != nil {
			return a, err
		}
	}
	return a, nil
}

// drinkUIDs lists the UIDs of the Drinks of ns by name, a page at a time.
func drinkUIDs(ctx context.Context, c client.Client, ns string) (map[string]types.UID, error) {
	uids := map[string]types.UID{}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(drinksv1.GroupVersion.WithKind("DrinkList"))
	for {
		if err := c.List(ctx, list, client.InNamespace(ns), client.Limit(5000), client.Continue(list.Continue)); err != nil {
			return nil, err
		}
		for _, d := range list.Items {
			uids[d.Name] = d.UID
		}
		if list.Continue == "" {
			return uids, nil
		}
	}
}

// probe is one probe Drink: when its create was sent, its UID, and when
// the bench saw it Ready at its generation.
type probe struct {
	created, ready time.Time
	uid            types.UID
}

// probeWatch creates probe Drinks and notes when each becomes Ready.
type probeWatch struct {
	mu     sync.Mutex
	probes map[string]*probe
	ready  map[string]time.Time
	sent   int
	// retried counts the probe creates that failed and were tried again.
	retried int
}

// watchProbes starts an informer on probeNS's Drinks.
func watchProbes(ctx context.Context, cfg *rest.Config) (*probeWatch, error) {
	pw := &probeWatch{probes: map[string]*probe{}, ready: map[string]time.Time{}}
	c, err := cache.New(cfg, cache.Options{Scheme: scheme.New(), DefaultNamespaces: map[string]cache.Config{probeNS: {}}})
	if err != nil {
		return nil, err
	}
	seen := func(obj any) {
		d, ok := obj.(*drinksv1.Drink)
		if !ok || !drinkDone(d) {
			return
		}
		now := time.Now()
		pw.mu.Lock()
		defer pw.mu.Unlock()
		if _, done := pw.ready[d.Name]; !done {
			pw.ready[d.Name] = now
		}
	}
	inf, err := c.GetInformer(ctx, &drinksv1.Drink{})
	if err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, obj any) { seen(obj) }}); err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the probe informer did not sync")
	}
	return pw, nil
}

// create creates probe Drinks at rate a second until ctx ends.
func (pw *probeWatch) create(ctx context.Context, c client.Client, rate float64) error {
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	errs := make(chan error, 1)
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			wg.Wait()
			select {
			case err := <-errs:
				return err
			default:
				return nil
			}
		case <-tick.C:
		}
		wg.Go(func() {
			d := newDrink(probeNS, i)
			d.Name = fmt.Sprintf("probe-%05d", i)
			created := time.Now()
			// Not ctx: a create under way when the probing stops is
			// finished and counted.
			if err := pw.createOne(context.WithoutCancel(ctx), c, d); err != nil {
				select {
				case errs <- fmt.Errorf("creating probe %s: %w", d.Name, err):
				default:
				}
				return
			}
			pw.mu.Lock()
			pw.probes[d.Name] = &probe{created: created, uid: d.UID}
			pw.sent++
			pw.mu.Unlock()
		})
	}
}

// createOne creates d, trying again for up to 30 s after a failure, as a
// client does: a webhook call under way to the replica the run kills
// fails, and the create with it. Its latency counts from the first try;
// the failed tries are counted in pw.retried. A create that had been
// stored before its answer was lost leaves AlreadyExists on the next try,
// and the stored Drink's UID is taken.
func (pw *probeWatch) createOne(ctx context.Context, c client.Client, d *drinksv1.Drink) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.Create(ctx, d.DeepCopy())
		if err == nil || apierrors.IsAlreadyExists(err) {
			return c.Get(ctx, client.ObjectKeyFromObject(d), d)
		}
		if time.Now().After(deadline) {
			return err
		}
		pw.mu.Lock()
		pw.retried++
		pw.mu.Unlock()
		time.Sleep(200 * time.Millisecond)
	}
}

// wait waits until every probe created is Ready and returns them.
func (pw *probeWatch) wait(ctx context.Context, timeout time.Duration) ([]probe, error) {
	var out []probe
	err := poll(ctx, time.Now().Add(timeout), 200*time.Millisecond, func() (bool, error) {
		pw.mu.Lock()
		defer pw.mu.Unlock()
		out = out[:0]
		for name, p := range pw.probes {
			at, ok := pw.ready[name]
			if !ok {
				return false, nil
			}
			p.ready = at
			out = append(out, *p)
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("the probe Drinks did not all get Ready: %w", err)
	}
	return out, nil
}

func upToSlice(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

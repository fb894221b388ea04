package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// Config is one invocation's settings.
type Config struct {
	Root    string // repository root (config/local)
	WorkDir string // logs and kubeconfigs
	Manager string // the built manager binary
	N       int
	// Workers are the concurrencies of the ceiling sweep; StepFor is how
	// long each runs.
	Workers []int
	StepFor time.Duration
	// Reconciles are the --max-concurrent-reconciles values to try.
	Reconciles []int
	// Window is how long writes are counted after convergence.
	Window time.Duration
	// ListReps is how many LISTs per version.
	ListReps int
	// BasePort is the first of the loopback ports the managers use.
	BasePort int
	// ProfileFor, when set, records CPU profiles of the API server and the
	// manager for this long from the start of the baseline and of the final
	// convergence; in a kill run (RunShardKill), of the API server and
	// every running replica from killProfileDelay after the SIGKILL.
	ProfileFor time.Duration
	// ProfileTail, when set, records CPU profiles of the API server and
	// the manager for this long from the start of each admission tail's
	// timed creates (with and without the webhooks).
	ProfileTail time.Duration
	// ManagerFlags are appended to every manager's flags (-manager-flag):
	// an A/B of one setting, such as --enable-http2, without a rebuild.
	// The record's command names them.
	ManagerFlags []string
	// Logf reports progress.
	Logf func(format string, args ...any)
	// memoryLimit is the manager container's limit in config/manager
	// (bytes); every manager the bench starts runs with it.
	memoryLimit float64
}

// Record is everything one run measured for one N.
type Record struct {
	Date string
	N    int

	Ceiling []CeilingStep
	Best    CeilingStep
	// Quiet: Drink creates one at a time with no reconcile running; Base:
	// the baseline at the best worker count.
	Quiet Quiet
	Base  Phase

	Sweep []SweepPoint
	BestK int
	// Op is the operator's convergence at BestK on a fresh control plane.
	Op Phase
	R  float64
	// Steady are the writes in Window after convergence.
	Steady Writes
	// Memory0 is the manager's before any Drink, MemoryN after N converged.
	Memory0, MemoryN Memory
	// MemoryLimit is the manager container's memory limit in config/manager
	// when the run was made (bytes).
	MemoryLimit float64 `json:",omitempty"`
	Lists       Lists
	Term, Kill  HandoverResult
	// Restart of the manager on N converged Drinks, the OperatorConfig
	// edit that revisits all of them, and the exact admission tail
	// (baseline control plane, N Drinks present).
	Restart RestartResult `json:",omitempty"`
	Edit    EditResult    `json:",omitempty"`
	Tail    Tail          `json:",omitempty"`
}

// SweepPoint is the operator's convergence at one reconcile concurrency.
type SweepPoint struct {
	K  int
	Op Phase
	R  float64
}

const drinkNS = "drinks"

// tailCreates is how many Drinks the admission tail creates one at a time,
// with and without the webhooks.
const tailCreates = 1000

// Run measures everything once for cfg.N. Each part that must not see
// another's objects gets a fresh control plane.
func Run(ctx context.Context, cfg Config) (Record, error) {
	rec := Record{Date: time.Now().UTC().Format(time.RFC3339), N: cfg.N}
	limit, err := ManifestMemoryLimit()
	if err != nil {
		return rec, err
	}
	rec.MemoryLimit, cfg.memoryLimit = limit, limit
	if err := runBaseline(ctx, cfg, &rec); err != nil {
		return rec, fmt.Errorf("baseline: %w", err)
	}
	sweep := cfg.Reconciles
	if len(sweep) == 1 {
		// Nothing to choose from: the operator phase's convergence is the
		// one point of the sweep (a sweep phase would converge the same
		// way once more: 8 of a run's 29 minutes at N = 50,000).
		rec.BestK, sweep = sweep[0], nil
	}
	for _, k := range sweep {
		var p Phase
		err := withPlane(ctx, cfg, fmt.Sprintf("sweep-k%d", k), func(cp *ControlPlane, dir string) error {
			m, err := startReady(ctx, cfg, cp, dir, k, false)
			if err != nil {
				return err
			}
			defer m.Stop()
			p, err = converge(ctx, cfg, cp, m, rec.Best.Workers)
			return err
		})
		if err != nil {
			return rec, fmt.Errorf("operator with %d reconciles: %w", k, err)
		}
		pt := SweepPoint{K: k, Op: p, R: p.Seconds / rec.Base.Seconds}
		cfg.Logf("N=%d K=%d: T_op %.1fs R %.2f", cfg.N, k, p.Seconds, pt.R)
		rec.Sweep = append(rec.Sweep, pt)
		if rec.BestK == 0 || pt.R < bestR(rec) {
			rec.BestK = k
		}
	}
	if err := withPlane(ctx, cfg, "operator", func(cp *ControlPlane, dir string) error {
		return runOperator(ctx, cfg, cp, dir, &rec)
	}); err != nil {
		return rec, fmt.Errorf("operator: %w", err)
	}
	return rec, nil
}

func bestR(rec Record) float64 {
	for _, p := range rec.Sweep {
		if p.K == rec.BestK {
			return p.R
		}
	}
	return 0
}

// withPlane runs f against a fresh control plane and stops it afterwards.
func withPlane(ctx context.Context, cfg Config, name string, f func(cp *ControlPlane, dir string) error) error {
	dir := filepath.Join(cfg.WorkDir, fmt.Sprintf("n%d-%s", cfg.N, name))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cfg.Logf("N=%d %s: starting kube-apiserver and etcd", cfg.N, name)
	cp, err := StartControlPlane(ctx, cfg.Root, dir)
	if err != nil {
		return err
	}
	defer cp.Stop()
	return f(cp, dir)
}

// startReady starts a manager on the bench's ports and waits for /readyz.
func startReady(ctx context.Context, cfg Config, cp *ControlPlane, dir string, k int, leaderElect bool) (*Manager, error) {
	return StartReady(ctx, managerOptions(cfg, cp, dir, k, leaderElect))
}

func managerOptions(cfg Config, cp *ControlPlane, dir string, k int, leaderElect bool) ManagerOptions {
	return ManagerOptions{
		Binary: cfg.Manager, Kubeconfig: cp.Kubeconfig, LogFile: filepath.Join(dir, "manager.log"),
		MetricsPort: cfg.BasePort, ProbePort: cfg.BasePort + 1, PprofPort: cfg.BasePort + 2,
		MaxConcurrentReconciles: k, LeaderElect: leaderElect, MemoryLimit: int64(cfg.memoryLimit),
		ExtraArgs: slices.Clone(cfg.ManagerFlags),
	}
}

func converge(ctx context.Context, cfg Config, cp *ControlPlane, m *Manager, w int) (Phase, error) {
	if err := cp.CreateNamespace(ctx, drinkNS); err != nil {
		return Phase{}, err
	}
	return Converge(ctx, cp, m, drinkNS, cfg.N, w, 20*time.Minute)
}

// runBaseline: the ceiling sweep on one control plane, then the baseline
// and quiet admission latency on a fresh one with a manager that serves
// webhooks but does not lead. The ceiling's many thousand ConfigMaps would
// otherwise weigh on the baseline (a larger etcd) but not on the operator.
func runBaseline(ctx context.Context, cfg Config, rec *Record) error {
	err := withPlane(ctx, cfg, "ceiling", func(cp *ControlPlane, _ string) error {
		if err := cp.CreateNamespace(ctx, "ceiling"); err != nil {
			return err
		}
		steps, err := Ceiling(ctx, cp.Clientset, "ceiling", cfg.Workers, cfg.StepFor)
		if err != nil {
			return err
		}
		rec.Ceiling, rec.Best = steps, BestWorkers(steps)
		for _, s := range steps {
			cfg.Logf("ceiling W=%d: %.0f creates/s p50 %.1fms p99 %.1fms", s.Workers, s.Rate, s.P50*1e3, s.P99*1e3)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return withPlane(ctx, cfg, "baseline", func(cp *ControlPlane, dir string) error {
		if err := HoldLease(ctx, cp.Client); err != nil {
			return err
		}
		m, err := startReady(ctx, cfg, cp, dir, 1, true)
		if err != nil {
			return err
		}
		defer m.Stop()
		if err := cp.CreateNamespace(ctx, "baseline"); err != nil {
			return err
		}
		profiled := func() error { return nil }
		if cfg.ProfileFor > 0 {
			profiled = profileCPU(ctx, cp, m, dir, cfg.ProfileFor)
		}
		if rec.Base, err = Baseline(ctx, cp, m, "baseline", cfg.N, rec.Best.Workers); err != nil {
			return err
		}
		if err := profiled(); err != nil {
			return err
		}
		cfg.Logf("N=%d T_base %.1fs at W=%d", cfg.N, rec.Base.Seconds, rec.Best.Workers)
		if err := cp.CreateNamespace(ctx, "quiet"); err != nil {
			return err
		}
		if rec.Quiet, err = QuietCreates(ctx, cp, m, "quiet", 20, 300); err != nil {
			return err
		}
		var profileTail func(run string) func() error
		if cfg.ProfileTail > 0 {
			profileTail = func(run string) func() error { return profileCPUAs(ctx, cp, m, dir, run+"-", cfg.ProfileTail) }
		}
		if rec.Tail, err = AdmissionTail(ctx, cp, "tail-hooks", "tail-none", 20, tailCreates, profileTail); err != nil {
			return fmt.Errorf("admission tail: %w", err)
		}
		cfg.Logf("N=%d admission tail: create p99 %.1fms with webhooks, %.1fms without; %.2f conversion calls per create",
			cfg.N, rec.Tail.Hooks.P99*1e3, rec.Tail.NoHooks.P99*1e3, rec.Tail.Hooks.ConversionCalls)
		return nil
	})
}

// runOperator: convergence at the best concurrency, then the quiet window,
// memory, LISTs and the two handovers, on one control plane.
func runOperator(ctx context.Context, cfg Config, cp *ControlPlane, dir string, rec *Record) error {
	m, err := startReady(ctx, cfg, cp, dir, rec.BestK, false)
	if err != nil {
		return err
	}
	defer m.Stop()
	if rec.Memory0, err = m.MeasureMemory(ctx); err != nil {
		return err
	}
	profiled := func() error { return nil }
	if cfg.ProfileFor > 0 {
		profiled = profileCPU(ctx, cp, m, dir, cfg.ProfileFor)
	}
	if rec.Op, err = converge(ctx, cfg, cp, m, rec.Best.Workers); err != nil {
		return err
	}
	if err := profiled(); err != nil {
		return err
	}
	rec.R = rec.Op.Seconds / rec.Base.Seconds
	if len(rec.Sweep) == 0 {
		rec.Sweep = []SweepPoint{{K: rec.BestK, Op: rec.Op, R: rec.R}}
	}
	cfg.Logf("N=%d K=%d: T_op %.1fs R %.2f; counting writes for %s", cfg.N, rec.BestK, rec.Op.Seconds, rec.R, cfg.Window)
	before, err := cp.APIMetrics(ctx)
	if err != nil {
		return err
	}
	time.Sleep(cfg.Window)
	after, err := cp.APIMetrics(ctx)
	if err != nil {
		return err
	}
	rec.Steady = writesOf(after).Minus(writesOf(before))
	if rec.MemoryN, err = m.MeasureMemory(ctx); err != nil {
		return err
	}
	// The heap profile says what the memory per Drink is made of.
	if err := m.SaveHeapProfile(ctx, filepath.Join(dir, "heap.pb.gz")); err != nil {
		return err
	}
	if rec.Lists, err = ListDrinks(ctx, cp, drinkNS, cfg.N, cfg.ListReps, m.Pid()); err != nil {
		return err
	}
	m.Stop()
	opts := managerOptions(cfg, cp, dir, rec.BestK, true)
	restartOpts := opts
	restartOpts.LogFile = filepath.Join(dir, "restart.log")
	m2, restart, err := Restart(ctx, cp, restartOpts, cfg.N, 20*time.Minute)
	if err != nil {
		return err
	}
	rec.Restart = restart
	cfg.Logf("N=%d restart: ready %.1fs, leader %.1fs, all reconciled %.1fs; writes %s", cfg.N, restart.ReadySeconds, restart.LeaderSeconds, restart.ReconciledSeconds, restart.Writes)
	rec.Edit, err = Edit(ctx, cp, m2, drinkNS, cfg.N, 20*time.Minute)
	m2.Stop()
	if err != nil {
		return fmt.Errorf("OperatorConfig edit: %w", err)
	}
	cfg.Logf("N=%d edit: Managed drained in %.1fs, probe Ready %.2fs; writes %s", cfg.N, rec.Edit.DrainSeconds, rec.Edit.ProbeReadySeconds, rec.Edit.ManagedWrites)
	// The edit's probe is one more Drink.
	n := cfg.N + 1
	if rec.Term, err = Handover(ctx, cp, opts, drinkNS, n, syscall.SIGTERM); err != nil {
		return err
	}
	if rec.Kill, err = Handover(ctx, cp, opts, drinkNS, n+1, syscall.SIGKILL); err != nil {
		return err
	}
	cfg.Logf("N=%d handover: SIGTERM %.1fs, SIGKILL %.1fs", cfg.N, rec.Term.ReconcileSeconds, rec.Kill.ReconcileSeconds)
	return nil
}

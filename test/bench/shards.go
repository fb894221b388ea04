package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"time"
)

// ShardRun is one measurement of replicas that share the Drinks
// (docs/sharding.md): N Drinks created, at Workers at once, while Replicas
// managers run, each with --shard-drinks and behind config/sharding's fence
// unless it is the only one (the default install's single leader). Each
// runs as the operator's ServiceAccount from a pod-bound token
// (startShardPlane); records before Identity was added ran every manager
// as the administrator, without the fence.
type ShardRun struct {
	Date        string
	N           int
	Replicas    int
	Sharded     bool
	FeatureGate bool // the API server's ShardedListAndWatch
	Workers     int
	// Seconds from the first create to every Drink Ready with its
	// ConfigMap; CreateSeconds for the creates alone.
	Seconds, CreateSeconds float64
	// Per replica after convergence: heap in use after a forced
	// collection, resident memory, bytes of Drinks read from the API
	// server (lists and watches), Drinks the server sent outside the
	// replica's buckets.
	HeapInuse, RSS, DrinkReadBytes, Unselected []float64
	// ConfigMapReadBytes are each replica's bytes of ConfigMaps read from
	// the API server (lists and watches): a replica that reads more than
	// its share's holds more than its share in some cache.
	ConfigMapReadBytes []float64 `json:",omitempty"`
	// Steady are the API writes in the Window after convergence (Leases
	// left out: the replicas renew their member Leases).
	Steady      Writes
	MemoryLimit float64
	// Handovers are each replica's changes of the buckets it serves
	// (myoperator_shard_handovers_total), its first included.
	Handovers []float64
	// Identity: the replicas ran as the ServiceAccount, the sharded ones
	// behind the fence.
	Identity bool
	// APIServerRSS is kube-apiserver's resident memory after the window
	// (its process_resident_memory_bytes): what the watches of every
	// replica cost the server, which without the feature gate sends each
	// Drink to every bucket's watch.
	APIServerRSS float64
	// Restarts are the replicas that exited without the bench asking
	// and were started again (shardReplicas).
	Restarts []string `json:",omitempty"`
	// CPU seconds used from the first create to convergence by
	// kube-apiserver and by each replica, and the busy share of the
	// machine's cores then: where the time of a slower convergence goes.
	APIServerCPU float64   `json:",omitempty"`
	ReplicaCPU   []float64 `json:",omitempty"`
	MachineBusy  float64   `json:",omitempty"`
	// FenceIdle: the fence was installed but never called
	// (shardPlane.FenceIdle), to measure what its calls cost.
	FenceIdle bool `json:",omitempty"`
	// DirectWebhooks: the API server called the one replica's webhooks
	// directly; every other run calls them through the bench's webhook
	// Service (test/bench/webhooksvc.go: a NAT rule; from 7fc73f0 until
	// it became one, a proxy in the bench process; records before
	// 7fc73f0 called the first replica directly).
	DirectWebhooks bool `json:",omitempty"`
	// ManagerFlags were added to every replica's flags (-manager-flag):
	// a run of a setting other than the install's.
	ManagerFlags []string `json:",omitempty"`
}

// ShardExtras are the runs RunShards makes after the replica counts.
type ShardExtras struct {
	// GateOff runs the largest count again on an API server without the
	// feature gate (each replica then receives every Drink and filters on
	// the client).
	GateOff bool
	// FenceIdle runs the largest count above 1 again with the fence never
	// called (shardPlane.FenceIdle).
	FenceIdle bool
	// Direct runs one replica again with its webhooks called directly,
	// not through the bench's webhook Service (shardPlane.DirectWebhooks).
	Direct bool
}

// RunShards measures cfg.N Drinks with each number of replicas, then the
// extra runs asked for. Each replica runs with limit as its memory limit
// (bytes).
func RunShards(ctx context.Context, cfg Config, replicas []int, workers int, extra ShardExtras, limit float64) ([]ShardRun, error) {
	cfg.memoryLimit = limit
	type plan struct {
		k int
		// gateOff rather than gate: the zero plan is the usual run.
		gateOff, fenceIdle, direct bool
	}
	var plans []plan
	for _, k := range replicas {
		plans = append(plans, plan{k: k})
	}
	if len(replicas) > 0 {
		last := replicas[len(replicas)-1]
		if extra.GateOff {
			plans = append(plans, plan{k: last, gateOff: true})
		}
		if extra.FenceIdle && last > 1 {
			plans = append(plans, plan{k: last, fenceIdle: true})
		}
	}
	if extra.Direct {
		plans = append(plans, plan{k: 1, direct: true})
	}
	var out []ShardRun
	for _, p := range plans {
		run, err := runShard(ctx, cfg, p.k, !p.gateOff, p.fenceIdle, p.direct, workers)
		if err != nil {
			return out, fmt.Errorf("%d replicas (feature gate %v, fence idle %v, webhooks direct %v): %w", p.k, !p.gateOff, p.fenceIdle, p.direct, err)
		}
		run.MemoryLimit = limit
		out = append(out, run)
	}
	return out, nil
}

func runShard(ctx context.Context, cfg Config, k int, gate, fenceIdle, direct bool, workers int) (ShardRun, error) {
	run := ShardRun{Date: time.Now().UTC().Format(time.RFC3339), N: cfg.N, Replicas: k, Sharded: k > 1, FeatureGate: gate, Workers: workers, Identity: true,
		FenceIdle: fenceIdle, DirectWebhooks: direct, ManagerFlags: cfg.ManagerFlags}
	name := fmt.Sprintf("shards-k%d", k)
	if !gate {
		name += "-nogate"
	}
	if fenceIdle {
		name += "-fenceidle"
	}
	if direct {
		name += "-direct"
	}
	dir := filepath.Join(cfg.WorkDir, fmt.Sprintf("n%d-%s", cfg.N, name))
	cfg.Logf("N=%d %s: starting kube-apiserver and etcd", cfg.N, name)
	cp, reps, err := startShardRun(ctx, cfg, dir, shardPlane{Gate: gate, Fence: run.Sharded, FenceIdle: fenceIdle, DirectWebhooks: direct}, int64(cfg.memoryLimit))
	if err != nil {
		return run, err
	}
	defer cp.Stop()
	defer reps.stopAll()
	reps.single = !run.Sharded
	if err := reps.start(ctx, upToSlice(k)...); err != nil {
		return run, err
	}
	if run.Sharded {
		if err := waitAssigned(ctx, cp.Client, reps.ids(), 2*time.Minute); err != nil {
			return run, err
		}
	}
	if err := cp.CreateNamespace(ctx, drinkNS); err != nil {
		return run, err
	}
	before, err := reps.cpu(ctx, k)
	if err != nil {
		return run, err
	}
	seconds, creates, err := createConverged(ctx, cp, cfg.N, workers)
	if err != nil {
		return run, err
	}
	run.Seconds, run.CreateSeconds = seconds, creates
	after, err := reps.cpu(ctx, k)
	if err != nil {
		return run, err
	}
	run.APIServerCPU, run.MachineBusy = after.api-before.api, busyBetween(before.machine, after.machine)
	for i := range after.replicas {
		run.ReplicaCPU = append(run.ReplicaCPU, after.replicas[i]-before.replicas[i])
	}
	cfg.Logf("N=%d %s: converged in %.1fs (creates %.1fs); CPU s kube-apiserver %.0f, replicas %.0f, machine busy %.2f; counting writes for %s",
		cfg.N, name, run.Seconds, run.CreateSeconds, run.APIServerCPU, run.ReplicaCPU, run.MachineBusy, cfg.Window)
	if run.Steady, err = cp.writesFor(ctx, cfg.Window); err != nil {
		return run, err
	}
	for _, i := range upToSlice(k) {
		m, err := reps.manager(i)
		if err != nil {
			return run, err
		}
		mem, err := m.MeasureMemory(ctx)
		if err != nil {
			return run, err
		}
		// What each replica's heap is made of, read with go tool pprof:
		// the heap figures alone cannot say whether a replica holds more
		// than its share of the Drinks or a fixed cost of its own.
		if err := m.SaveHeapProfile(ctx, filepath.Join(dir, fmt.Sprintf("heap-replica-%d.pb.gz", i))); err != nil {
			return run, err
		}
		met, err := m.Metrics(ctx)
		if err != nil {
			return run, err
		}
		run.HeapInuse = append(run.HeapInuse, mem.HeapInuse)
		run.RSS = append(run.RSS, mem.RSS)
		run.DrinkReadBytes = append(run.DrinkReadBytes, met.Sum("myoperator_api_read_bytes_total", func(l map[string]string) bool { return l["resource"] == "drinks" }))
		run.ConfigMapReadBytes = append(run.ConfigMapReadBytes, met.Sum("myoperator_api_read_bytes_total", func(l map[string]string) bool { return l["resource"] == "configmaps" }))
		run.Unselected = append(run.Unselected, met.Value("myoperator_shard_unselected_drinks_total"))
		run.Handovers = append(run.Handovers, met.Value("myoperator_shard_handovers_total"))
	}
	am, err := cp.APIMetrics(ctx)
	if err != nil {
		return run, err
	}
	run.APIServerRSS = am.Value("process_resident_memory_bytes")
	run.Restarts = reps.Restarts()
	cfg.Logf("N=%d %s: heap in use %v MiB, Drinks read %v MiB, ConfigMaps read %v MiB, unselected %v, handovers %v, steady writes %s, kube-apiserver RSS %v MiB", cfg.N, name,
		MiB(run.HeapInuse), MiB(run.DrinkReadBytes), MiB(run.ConfigMapReadBytes), run.Unselected, run.Handovers, run.Steady, MiB([]float64{run.APIServerRSS}))
	return run, nil
}

// cpuReading is the CPU seconds kube-apiserver and replicas 0..k-1 have
// used, and the machine's CPU times.
type cpuReading struct {
	api      float64
	replicas []float64
	machine  cpuTimes
}

func (r *shardReplicas) cpu(ctx context.Context, k int) (cpuReading, error) {
	var c cpuReading
	am, err := r.cp.APIMetrics(ctx)
	if err != nil {
		return c, err
	}
	c.api = am.Value(cpuSeconds)
	for i := range k {
		m, err := r.manager(i)
		if err != nil {
			return c, err
		}
		mm, err := m.Metrics(ctx)
		if err != nil {
			return c, err
		}
		c.replicas = append(c.replicas, mm.Value(cpuSeconds))
	}
	c.machine, err = readCPU()
	return c, err
}

// MiB is v in MiB, to one decimal.
func MiB(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(int(x/(1<<20)*10+0.5)) / 10
	}
	return out
}

// createConverged creates n Drinks in drinkNS on workers at once and
// waits until each is Ready with its ConfigMap: the seconds from the first
// create to that, and of the creates alone.
func createConverged(ctx context.Context, cp *ControlPlane, n, workers int) (float64, float64, error) {
	wait, err := watchConvergence(ctx, cp.Config, drinkNS, n, 4*time.Hour)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	load := runWorkers(ctx, workers, upTo(n), func(ctx context.Context, i int) error {
		return cp.Client.Create(ctx, newDrink(drinkNS, i))
	})
	if load.FirstErr != nil {
		return 0, 0, fmt.Errorf("creating Drinks: %d of %d failed, first: %w", load.Errors, n, load.FirstErr)
	}
	converged, err := wait()
	if err != nil {
		return 0, 0, err
	}
	return converged.Sub(start).Seconds(), load.Elapsed.Seconds(), nil
}

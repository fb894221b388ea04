package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/myoperator/internal/shard"
)

// ShardRun is one measurement of replicas that share the Drinks
// (docs/sharding.md): N Drinks created, at Workers at once, while Replicas
// managers run, each with --shard-drinks unless it is the only one (the
// default install's single leader).
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
	// Steady are the API writes in the Window after convergence (Leases
	// left out: the replicas renew their member Leases).
	Steady      Writes
	MemoryLimit float64
}

// RunShards measures cfg.N Drinks with each number of replicas, and, with
// gateOff, the largest number again on an API server without the feature
// gate (each replica then receives every Drink and filters on the client).
func RunShards(ctx context.Context, cfg Config, replicas []int, workers int, gateOff bool) ([]ShardRun, error) {
	limit, err := ManifestMemoryLimit()
	if err != nil {
		return nil, err
	}
	cfg.memoryLimit = limit
	type plan struct {
		k    int
		gate bool
	}
	var plans []plan
	for _, k := range replicas {
		plans = append(plans, plan{k, true})
	}
	if gateOff && len(replicas) > 0 {
		plans = append(plans, plan{replicas[len(replicas)-1], false})
	}
	var out []ShardRun
	for _, p := range plans {
		run, err := runShard(ctx, cfg, p.k, p.gate, workers)
		if err != nil {
			return out, fmt.Errorf("%d replicas (feature gate %v): %w", p.k, p.gate, err)
		}
		run.MemoryLimit = limit
		out = append(out, run)
	}
	return out, nil
}

func runShard(ctx context.Context, cfg Config, k int, gate bool, workers int) (ShardRun, error) {
	run := ShardRun{Date: time.Now().UTC().Format(time.RFC3339), N: cfg.N, Replicas: k, Sharded: k > 1, FeatureGate: gate, Workers: workers}
	name := fmt.Sprintf("shards-k%d", k)
	opts := PlaneOptions{EtcdQuotaBytes: 8 << 30}
	if gate {
		opts.FeatureGates = "ShardedListAndWatch=true"
	} else {
		name += "-nogate"
	}
	dir := filepath.Join(cfg.WorkDir, fmt.Sprintf("n%d-%s", cfg.N, name))
	cfg.Logf("N=%d %s: starting kube-apiserver and etcd", cfg.N, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return run, err
	}
	cp, err := StartControlPlaneWith(ctx, cfg.Root, dir, opts)
	if err != nil {
		return run, err
	}
	defer cp.Stop()
	var managers []*Manager
	defer func() {
		for _, m := range managers {
			m.Stop()
		}
	}()
	reconciles := 16
	if len(cfg.Reconciles) > 0 {
		reconciles = cfg.Reconciles[0]
	}
	var ids []string
	for i := range k {
		id := "bench-" + strconv.Itoa(i)
		ids = append(ids, id)
		o := ManagerOptions{
			Binary: cfg.Manager, Kubeconfig: cp.Kubeconfig, LogFile: filepath.Join(dir, id+".log"),
			MetricsPort: cfg.BasePort + 3*i, ProbePort: cfg.BasePort + 3*i + 1, PprofPort: cfg.BasePort + 3*i + 2,
			MaxConcurrentReconciles: reconciles, LeaderElect: true, MemoryLimit: int64(cfg.memoryLimit),
			ExtraArgs: []string{"--pod-name=" + id},
		}
		if i > 0 {
			// config/local sends admission to 9443: the first replica's.
			o.WebhookPort = cfg.BasePort + 30 + i
		}
		if run.Sharded {
			o.ExtraArgs = append(o.ExtraArgs, "--shard-drinks")
		}
		m, err := StartReady(ctx, o)
		if err != nil {
			return run, err
		}
		managers = append(managers, m)
	}
	if run.Sharded {
		if err := waitBuckets(ctx, cp.Client, ids, 2*time.Minute); err != nil {
			return run, err
		}
	}
	if err := cp.CreateNamespace(ctx, drinkNS); err != nil {
		return run, err
	}
	wait, err := watchConvergence(ctx, cp.Config, drinkNS, cfg.N, 60*time.Minute)
	if err != nil {
		return run, err
	}
	start := time.Now()
	load := runWorkers(ctx, workers, upTo(cfg.N), func(ctx context.Context, i int) error {
		return cp.Client.Create(ctx, newDrink(drinkNS, i))
	})
	if load.FirstErr != nil {
		return run, fmt.Errorf("creating Drinks: %d of %d failed, first: %w", load.Errors, cfg.N, load.FirstErr)
	}
	converged, err := wait()
	if err != nil {
		return run, err
	}
	run.Seconds, run.CreateSeconds = converged.Sub(start).Seconds(), load.Elapsed.Seconds()
	cfg.Logf("N=%d %s: converged in %.1fs (creates %.1fs); counting writes for %s", cfg.N, name, run.Seconds, run.CreateSeconds, cfg.Window)
	before, err := cp.APIMetrics(ctx)
	if err != nil {
		return run, err
	}
	time.Sleep(cfg.Window)
	after, err := cp.APIMetrics(ctx)
	if err != nil {
		return run, err
	}
	run.Steady = writesOf(after).Minus(writesOf(before))
	for _, m := range managers {
		mem, err := m.MeasureMemory(ctx)
		if err != nil {
			return run, err
		}
		met, err := m.Metrics(ctx)
		if err != nil {
			return run, err
		}
		run.HeapInuse = append(run.HeapInuse, mem.HeapInuse)
		run.RSS = append(run.RSS, mem.RSS)
		run.DrinkReadBytes = append(run.DrinkReadBytes, met.Sum("myoperator_api_read_bytes_total", func(l map[string]string) bool { return l["resource"] == "drinks" }))
		run.Unselected = append(run.Unselected, met.Value("myoperator_shard_unselected_drinks_total"))
	}
	cfg.Logf("N=%d %s: heap in use %v MiB, Drinks read %v MiB, unselected %v, steady writes %s", cfg.N, name,
		MiB(run.HeapInuse), MiB(run.DrinkReadBytes), run.Unselected, run.Steady)
	return run, nil
}

// waitBuckets waits until ids hold the 64 bucket Leases between them.
func waitBuckets(ctx context.Context, c client.Client, ids []string, timeout time.Duration) error {
	return poll(ctx, time.Now().Add(timeout), time.Second, func() (bool, error) {
		list := &coordinationv1.LeaseList{}
		if err := c.List(ctx, list, client.InNamespace(OperatorNamespace), client.HasLabels{shard.BucketLabel}); err != nil {
			return false, err
		}
		held := map[string]int{}
		for _, l := range list.Items {
			held[ptr.Deref(l.Spec.HolderIdentity, "")]++
		}
		total := 0
		for _, id := range ids {
			if held[id] == 0 {
				return false, nil
			}
			total += held[id]
		}
		return total == shard.Buckets, nil
	})
}

// MiB is v in MiB, to one decimal.
func MiB(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(int(x/(1<<20)*10+0.5)) / 10
	}
	return out
}

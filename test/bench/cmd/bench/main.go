package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/example/myoperator/test/bench"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/framework/testutil"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		ns, workers, reconciles, out, report string
		runs, outageWorkers                  int
		outage                               bool
		cfg                                  bench.Config
	)
	flag.StringVar(&ns, "n", "1000", "Comma-separated numbers of Drinks; each run measures each.")
	flag.IntVar(&runs, "runs", 1, "How many times to measure everything.")
	flag.StringVar(&workers, "workers", "1,2,4,8,16,32,64", "Client concurrencies of the ceiling sweep.")
	flag.DurationVar(&cfg.StepFor, "step", 3*time.Second, "How long each concurrency of the ceiling sweep runs.")
	flag.StringVar(&reconciles, "reconciles", "8,16,32", "--max-concurrent-reconciles values to try; the best R is reported.")
	flag.DurationVar(&cfg.Window, "window", 60*time.Second, "How long writes are counted after convergence.")
	flag.IntVar(&cfg.ListReps, "list-reps", 5, "LISTs per version for the conversion ratio.")
	flag.StringVar(&cfg.Manager, "manager", "bin/manager", "The manager binary (make build), relative to the repository root.")
	flag.StringVar(&cfg.WorkDir, "workdir", "bin/bench-runs", "Where logs and kubeconfigs go, relative to the repository root.")
	flag.IntVar(&cfg.BasePort, "port", 18190, "First of the loopback ports of the managers' metrics, probes and pprof (uses port..port+12).")
	flag.DurationVar(&cfg.ProfileFor, "profile", 0, "Record CPU profiles of kube-apiserver and the manager for this long from the start of the baseline and of the final convergence (into -workdir); with -shard-kill, of kube-apiserver and every replica from 12 s after the SIGKILL.")
	flag.DurationVar(&cfg.ProfileTail, "profile-tail", 0, "Record CPU profiles of kube-apiserver and the manager for this long from the start of each admission tail's timed creates (into -workdir, tail-hooks-* and tail-none-*).")
	flag.StringVar(&out, "out", "", "Append each run's record to this JSON-lines file.")
	flag.StringVar(&report, "report", "", "Print the table of the records in this JSON-lines file and exit.")
	flag.BoolVar(&outage, "outage", false, "Measure only the OperatorConfig outage: for each N of -n, converge N Drinks on a fresh control plane (-reconciles' first value), delete OperatorConfig cluster, recreate it as the bootstrap does, and count every write; -out gets one record per N with the machine, command and commit.")
	flag.IntVar(&outageWorkers, "outage-workers", 16, "Client concurrency of the Drink creates before the outage (-outage).")
	var shards string
	var shardWorkers int
	var shardsGateOff, shardsFenceIdle, shardsDirect bool
	var shardKill int
	var shardScale string
	var shardMemoryLimit int64
	flag.StringVar(&shards, "shards", "", "Measure only replicas that share the Drinks: for each N of -n and each replica count here (for example 1,2,4; one replica runs as the default install's single leader), create N Drinks while the replicas run and record convergence, each replica's heap and Drink bytes read, and the writes after convergence; -out gets one record per run with the machine, command and commit.")
	flag.IntVar(&shardWorkers, "shard-workers", 16, "Client concurrency of the Drink creates (-shards).")
	flag.BoolVar(&shardsGateOff, "shards-gate-off", false, "With -shards, measure the largest replica count again on an API server without ShardedListAndWatch (each replica filters on the client).")
	flag.BoolVar(&shardsDirect, "shards-direct", false, "With -shards, run one replica again with the API server calling its webhooks directly rather than through the bench's loopback webhook Service: what the Service costs.")
	flag.BoolVar(&shardsFenceIdle, "shards-fence-idle", false, "With -shards, measure the largest replica count (above 1) again with the fence installed but never called (a match condition that is false): what the fence's calls cost, measured apart. Such replicas are not fenced.")
	flag.IntVar(&shardKill, "shard-kill", 0, "Measure only a SIGKILL of one of this many replicas that share the Drinks: for each N of -n, converge N Drinks, create probe Drinks at 10 a second, kill one replica, and record the takeover of its buckets, the probes' latency in its buckets and the others', and the audit log's double writes.")
	flag.StringVar(&shardScale, "shard-scale", "", "Measure only replicas scaled through these counts (for example 1,4,2,1) while N Drinks are created: each change after an equal part of the creates; record each rebalance's time, the convergence and the audit log's double writes.")
	flag.Int64Var(&shardMemoryLimit, "shard-memory-limit", 0, "The memory limit (bytes) every replica of -shards, -shard-kill and -shard-scale runs with (its Go soft limit, as the Deployment's limit gives it); 0 takes config/manager's.")
	flag.Func("manager-flag", "A flag every manager the bench starts gets too (repeatable), for example --enable-http2: an A/B of one setting.", func(v string) error {
		cfg.ManagerFlags = append(cfg.ManagerFlags, v)
		return nil
	})
	flag.Parse()
	if report != "" {
		recs, err := readRecords(report)
		if err != nil {
			return err
		}
		bench.Report(os.Stdout, recs)
		return nil
	}
	// envtest logs through controller-runtime; the bench reports on its own.
	ctrllog.SetLogger(logr.Discard())
	sizes, err := bench.ParseInts(ns)
	if err != nil {
		return err
	}
	if cfg.Workers, err = bench.ParseInts(workers); err != nil {
		return err
	}
	if cfg.Reconciles, err = bench.ParseInts(reconciles); err != nil {
		return err
	}
	if cfg.Root, err = testutil.FindRepoRoot(); err != nil {
		return err
	}
	cfg.Manager = filepath.Join(cfg.Root, cfg.Manager)
	cfg.WorkDir = filepath.Join(cfg.Root, cfg.WorkDir)
	if _, err := os.Stat(cfg.Manager); err != nil {
		return fmt.Errorf("%w; run make build first", err)
	}
	started := time.Now()
	cfg.Logf = func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(started).Seconds(), fmt.Sprintf(format, args...))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if outage {
		return runOutage(ctx, cfg, sizes, outageWorkers, out)
	}
	if shardMemoryLimit == 0 {
		limit, err := bench.ManifestMemoryLimit()
		if err != nil {
			return err
		}
		shardMemoryLimit = int64(limit)
	}
	if shardKill > 0 || shardScale != "" {
		steps, err := bench.ParseInts(shardScale)
		if shardScale == "" {
			steps, err = nil, nil
		}
		if err != nil {
			return err
		}
		return runShardFaults(ctx, cfg, sizes, shardKill, steps, shardWorkers, shardMemoryLimit, out)
	}
	if shards != "" {
		replicas, err := bench.ParseInts(shards)
		if err != nil {
			return err
		}
		return runShards(ctx, cfg, sizes, replicas, shardWorkers, bench.ShardExtras{GateOff: shardsGateOff, FenceIdle: shardsFenceIdle, Direct: shardsDirect}, float64(shardMemoryLimit), out)
	}

	// Each line says where it was made: make release asks for a make
	// bench run at its code (hack/releasegate).
	head := runRecord{Command: strings.Join(os.Args, " ")}
	if head.Commit, head.ManagerVersion, head.Machine, err = whereMade(ctx, cfg); err != nil {
		return err
	}
	var recs []bench.Record
	for i := range runs {
		for _, n := range sizes {
			cfg.N = n
			cfg.Logf("run %d of %d, N=%d", i+1, runs, n)
			rec, err := bench.Run(ctx, cfg)
			if err != nil {
				return fmt.Errorf("run %d, N=%d: %w (logs in %s)", i+1, n, err, cfg.WorkDir)
			}
			recs = append(recs, rec)
			line := head
			line.Record = rec
			if err := appendRecord(out, line); err != nil {
				return err
			}
		}
	}
	cfg.Logf("done")
	bench.Report(os.Stdout, recs)
	return nil
}

func appendRecord(path string, rec any) error {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return errors.Join(err, f.Close())
	}
	_, err = f.Write(append(line, '\n'))
	return errors.Join(err, f.Close())
}

func readRecords(path string) ([]bench.Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var recs []bench.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r bench.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		recs = append(recs, r)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%s holds no records", path)
	}
	return recs, sc.Err()
}

// outageRecord is one line of -outage's results: what was measured and
// what produced it.
type outageRecord struct {
	Date string
	N    int
	// Commit is the repository's HEAD, "+dirty" when tracked files differ
	// from it (the manager and the bench are built from the work tree).
	Commit         string
	Command        string
	Machine        machine
	ManagerVersion string
	bench.OutageRun
}

// machine is what the numbers ran on.
type machine struct {
	Nproc                 int
	MemTotal, Kernel, CPU string
	GoVersion             string
	KubeAPIServer, Etcd   string
	// The Go releases the manager and kube-apiserver were built with, and
	// how fast one core of the machine hashes when the bench starts:
	// records made on other machines or builds differ by these as much
	// as by the code, and only they tell the two apart.
	ManagerGo, KubeAPIServerGo string  `json:",omitempty"`
	CoreSHA256MBps             float64 `json:",omitempty"`
}

// runOutage measures the OperatorConfig outage once per size, each on a
// fresh control plane, appending a record per size to out.
func runOutage(ctx context.Context, cfg bench.Config, sizes []int, workers int, out string) error {
	k := cfg.Reconciles[0]
	for _, n := range sizes {
		cfg.N = n
		rec := outageRecord{Date: time.Now().UTC().Format(time.RFC3339), N: n, Command: strings.Join(os.Args, " ")}
		var err error
		if rec.Commit, rec.ManagerVersion, rec.Machine, err = whereMade(ctx, cfg); err != nil {
			return err
		}
		cfg.Logf("OperatorConfig outage, N=%d, K=%d, %d client workers", n, k, workers)
		if rec.OutageRun, err = bench.Outage(ctx, cfg, k, workers); err != nil {
			return fmt.Errorf("outage, N=%d: %w (logs in %s)", n, err, cfg.WorkDir)
		}
		if err := appendRecord(out, rec); err != nil {
			return err
		}
		printOutage(rec)
	}
	cfg.Logf("done")
	return nil
}

// runRecord is one run of the whole bench (make bench, make bench-full)
// with where it was made.
type runRecord struct {
	bench.Record
	Command, Commit, ManagerVersion string
	Machine                         machine
}

// shardRecord is one -shards run with where it was made.
type shardRecord struct {
	bench.ShardRun
	Command, Commit, ManagerVersion string
	Machine                         machine
}

func runShards(ctx context.Context, cfg bench.Config, sizes, replicas []int, workers int, extra bench.ShardExtras, limit float64, out string) error {
	head := shardRecord{Command: strings.Join(os.Args, " ")}
	var err error
	if head.Commit, head.ManagerVersion, head.Machine, err = whereMade(ctx, cfg); err != nil {
		return err
	}
	for _, n := range sizes {
		cfg.N = n
		runs, err := bench.RunShards(ctx, cfg, replicas, workers, extra, limit)
		for _, r := range runs {
			rec := head
			rec.ShardRun = r
			if err := appendRecord(out, rec); err != nil {
				return err
			}
			fmt.Printf("N=%d replicas=%d sharded=%v gate=%v fence idle=%v direct=%v: converged %.1fs (creates %.1fs); heap MiB %v; Drinks read MiB %v; unselected %v; writes after convergence %s\n",
				r.N, r.Replicas, r.Sharded, r.FeatureGate, r.FenceIdle, r.DirectWebhooks, r.Seconds, r.CreateSeconds, bench.MiB(r.HeapInuse), bench.MiB(r.DrinkReadBytes), r.Unselected, r.Steady)
		}
		if err != nil {
			return fmt.Errorf("at %d Drinks: %w (logs in %s)", n, err, cfg.WorkDir)
		}
	}
	cfg.Logf("done")
	return nil
}

// shardKillRecord and shardScaleRecord are -shard-kill and -shard-scale
// runs with where they were made.
type shardKillRecord struct {
	Kill                            *bench.ShardKill
	Command, Commit, ManagerVersion string
	Machine                         machine
}

type shardScaleRecord struct {
	Scale                           *bench.ShardScale
	Command, Commit, ManagerVersion string
	Machine                         machine
}

func runShardFaults(ctx context.Context, cfg bench.Config, sizes []int, kill int, steps []int, workers int, limit int64, out string) error {
	commit, version, mach, err := whereMade(ctx, cfg)
	if err != nil {
		return err
	}
	command := strings.Join(os.Args, " ")
	for _, n := range sizes {
		cfg.N = n
		if kill > 0 {
			k, err := bench.RunShardKill(ctx, cfg, kill, workers, limit)
			if err != nil {
				return fmt.Errorf("kill 1 of %d at %d Drinks: %w (logs in %s)", kill, n, err, cfg.WorkDir)
			}
			if err := appendRecord(out, shardKillRecord{&k, command, commit, version, mach}); err != nil {
				return err
			}
			fmt.Printf("N=%d kill 1 of %d (%d buckets): taken over in %.1fs, its range reconciled in %.1fs; probe p99 before %.2fs, in the buckets the others kept %.2fs (max %.2fs, %d over 2s of %d), moved between them %.2fs (%d), in its range %.2fs; double writes %d of %d written\n",
				n, kill, k.KilledBuckets, k.TakeoverSeconds, k.RecoverSeconds, k.Baseline.P99, k.Others.P99, k.Others.Max, k.Others.Over2s, k.Others.Count,
				k.Moved.P99, k.Moved.Count, k.Killed.P99, k.Audit.Stale, k.Audit.Written)
		}
		if len(steps) > 0 {
			s, err := bench.RunShardScale(ctx, cfg, steps, workers, limit)
			if err != nil {
				return fmt.Errorf("scale %v at %d Drinks: %w (logs in %s)", steps, n, err, cfg.WorkDir)
			}
			if err := appendRecord(out, shardScaleRecord{&s, command, commit, version, mach}); err != nil {
				return err
			}
			fmt.Printf("N=%d scale %v: converged in %.1fs; rebalances %v s; double writes %d of %d written\n", n, steps, s.Seconds, s.Rebalance, s.Audit.Stale, s.Audit.Written)
		}
	}
	cfg.Logf("done")
	return nil
}

func printOutage(rec outageRecord) {
	o := rec.Outage
	l := rec.Lists
	fmt.Printf("LISTs at N=%d: v1 %.1fs, v1alpha1 %.1fs in %d pages (manager peak RSS %.1f MiB), unpaginated v1alpha1 %.1fs (peak RSS %.1f MiB; RSS before %.1f MiB, limit %.0f MiB)\n",
		rec.N, l.V1, l.V1alpha1, l.Pages, l.PeakRSSV1alpha1/(1<<20), l.Unpaginated, l.PeakRSSUnpaginated/(1<<20), l.RSSBefore/(1<<20), rec.MemoryLimit/(1<<20))
	fmt.Printf("OperatorConfig outage at N=%d (K=%d, commit %s)\n", rec.N, rec.K, rec.Commit)
	fmt.Printf("  delete:   drained in %.1fs, writes quiet at %.1fs, %.0f reconciles; writes %s\n", o.DeleteSeconds, o.DeleteQuietSeconds, o.DeleteReconciles, o.DeleteWrites)
	fmt.Printf("  recreate: drained in %.1fs, writes quiet at %.1fs, %.0f reconciles; writes %s\n", o.RecreateSeconds, o.RecreateQuietSeconds, o.RecreateReconciles, o.RecreateWrites)
	fmt.Printf("  all writes (%.0f): %s\n", o.Writes.Total(), o.Writes)
	fmt.Printf("  record ConfigMap writes: %d; beyond the record: %.0f; Events created: %.0f\n", o.RecordWrites, o.BeyondRecord, o.Events)
}

// whereMade is what every results line says of where it was made: the
// commit (commitOf), the manager's --version and the machine.
func whereMade(ctx context.Context, cfg bench.Config) (commit, version string, m machine, err error) {
	if commit, err = commitOf(ctx, cfg.Root); err != nil {
		return "", "", machine{}, err
	}
	if m, err = machineOf(ctx, cfg.Manager); err != nil {
		return "", "", machine{}, err
	}
	if version, err = output(ctx, cfg.Manager, "--version"); err != nil {
		return "", "", machine{}, err
	}
	return commit, version, m, nil
}

// commitOf is root's HEAD, with "+dirty" when a tracked file differs.
func commitOf(ctx context.Context, root string) (string, error) {
	head, err := output(ctx, "git", "-C", root, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	status, err := output(ctx, "git", "-C", root, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return "", err
	}
	if status != "" {
		head += "+dirty"
	}
	return head, nil
}

func machineOf(ctx context.Context, manager string) (machine, error) {
	var m machine
	nproc, err := output(ctx, "nproc")
	if err != nil {
		return m, err
	}
	if _, err := fmt.Sscan(nproc, &m.Nproc); err != nil {
		return m, fmt.Errorf("nproc said %q: %w", nproc, err)
	}
	if m.Kernel, err = output(ctx, "uname", "-r"); err != nil {
		return m, err
	}
	m.MemTotal, err = procField("/proc/meminfo", "MemTotal")
	if err != nil {
		return m, err
	}
	if m.CPU, err = procField("/proc/cpuinfo", "model name"); err != nil {
		return m, err
	}
	m.GoVersion = runtime.Version()
	dir, err := testenv.BinaryDir()
	if err != nil {
		return m, err
	}
	if m.KubeAPIServer, err = output(ctx, filepath.Join(dir, "kube-apiserver"), "--version"); err != nil {
		return m, err
	}
	etcd, err := output(ctx, filepath.Join(dir, "etcd"), "--version")
	if err != nil {
		return m, err
	}
	m.Etcd, _, _ = strings.Cut(etcd, "\n")
	if m.ManagerGo, err = goVersionOf(manager); err != nil {
		return m, err
	}
	if m.KubeAPIServerGo, err = goVersionOf(filepath.Join(dir, "kube-apiserver")); err != nil {
		return m, err
	}
	m.CoreSHA256MBps = coreSHA256MBps()
	return m, nil
}

// goVersionOf is the Go release a binary was built with.
func goVersionOf(path string) (string, error) {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the build information of %s: %w", path, err)
	}
	return info.GoVersion, nil
}

// coreSHA256MBps is how many MB a second one goroutine hashes with
// SHA-256 over half a second: a figure of one core's speed, to compare
// records of different machines by (the convergence of a run on a
// 2-core machine follows the cores' speed).
func coreSHA256MBps() float64 {
	buf := make([]byte, 1<<20)
	start := time.Now()
	n := 0
	for time.Since(start) < 500*time.Millisecond {
		sha256.Sum256(buf)
		n++
	}
	return math.Round(float64(n)/time.Since(start).Seconds()*float64(len(buf))/1e6*10) / 10
}

// procField is the value of the first "key: value" line of a /proc file.
func procField(path, key string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(data)) {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("%s has no %s", path, key)
}

// output runs a command and returns its trimmed standard output.
func output(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

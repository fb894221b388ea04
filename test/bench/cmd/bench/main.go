package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/example/myoperator/test/bench"
	"github.com/example/myoperator/test/framework/testenv"
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
		runs                                 int
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
	flag.DurationVar(&cfg.ProfileFor, "profile", 0, "Record CPU profiles of kube-apiserver and the manager for this long from the start of the baseline and of the final convergence (into -workdir).")
	flag.DurationVar(&cfg.ProfileTail, "profile-tail", 0, "Record CPU profiles of kube-apiserver and the manager for this long from the start of each admission tail's timed creates (into -workdir, tail-hooks-* and tail-none-*).")
	flag.StringVar(&out, "out", "", "Append each run's record to this JSON-lines file.")
	flag.StringVar(&report, "report", "", "Print the table of the records in this JSON-lines file and exit.")
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
	if cfg.Root, err = testenv.RepoRoot(); err != nil {
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
			if err := appendRecord(out, rec); err != nil {
				return err
			}
		}
	}
	cfg.Logf("done")
	bench.Report(os.Stdout, recs)
	return nil
}

func appendRecord(path string, rec bench.Record) error {
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

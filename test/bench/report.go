package bench

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// target is a product goal: the measure must be at most Max.
type target struct {
	Max  float64
	Text string
}

// row is one measure of the table: one value per run.
type row struct {
	name   string
	unit   string
	values []float64
	target *target
	// center, when set, is the figure shown and judged in place of the
	// values' median (which stays the basis of min and max).
	center *float64
}

// The product's goals (docs/BENCHMARKS.md).
var (
	targetR         = &target{1.25, "<= 1.25"}
	targetSteady    = &target{0, "0"}
	targetKiB       = &target{6, "<= 6"}
	targetList      = &target{1.5, "<= 1.5"}
	targetAdmission = &target{10, "<= 10"}
	targetHandover  = &target{3, "<= 3"}
	targetNoWrites  = &target{0, "0"}
	targetProbe     = &target{2, "<= 2"}
	targetTailDiff  = &target{5, "<= 5"}
	// The targets at N = 50,000: R, the heap per Drink from 10,000
	// to 50,000, and the RSS as a share of config/manager's memory limit.
	targetR50k       = &target{1.10, "<= 1.10"}
	targetSlope50k   = &target{2.5, "<= 2.5"}
	targetLimitShare = &target{70, "<= 70"}
)

// probeWrites are the writes one probe Drink costs: the bench's create,
// the operator's ConfigMap create and status patch. recordWrites: an
// accepted OperatorConfig edit updates the operator's record of it, a
// ConfigMap in its own namespace (internal/opconfig), which the API
// server's counters cannot tell from a Drink's.
const (
	probeWrites  = 3
	recordWrites = 1
)

func formatCount(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func format(v float64) string {
	switch a := max(v, -v); {
	case a == 0:
		return "0"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// operatorWrites are a phase's writes except the bench's own Drink creates.
func operatorWrites(p Phase) float64 {
	return p.Metrics.Writes.Total() - p.Metrics.Writes["POST drinks/"]
}

// rowsFor lists every measure of the records of one N.
func rowsFor(recs []Record) []row {
	n := float64(recs[0].N)
	per := func(f func(Record) float64) []float64 {
		out := make([]float64, len(recs))
		for i, r := range recs {
			out[i] = f(r)
		}
		return out
	}
	const mib, kib = 1 << 20, 1 << 10
	rTarget := targetR
	if recs[0].N >= 50000 {
		rTarget = targetR50k
	}
	rows := []row{
		{"ceiling C: ConfigMap creates/s at the best W", "1/s", per(func(r Record) float64 { return r.Best.Rate }), nil, nil},
		{"best W (workers)", "", per(func(r Record) float64 { return float64(r.Best.Workers) }), nil, nil},
		{"T_base: plain client, the operator's writes", "s", per(func(r Record) float64 { return r.Base.Seconds }), nil, nil},
		{"T_op: operator converges (best K)", "s", per(func(r Record) float64 { return r.Op.Seconds }), nil, nil},
		{"R = T_op / T_base", "", per(func(r Record) float64 { return r.R }), rTarget, nil},
		{"best --max-concurrent-reconciles K", "", per(func(r Record) float64 { return float64(r.BestK) }), nil, nil},
		{"operator writes per Drink (minimum 2: ConfigMap, status)", "", per(func(r Record) float64 { return operatorWrites(r.Op) / n }), nil, nil},
		{"writes per Drink beyond the minimum", "", per(func(r Record) float64 { return operatorWrites(r.Op)/n - 2 }), nil, nil},
		{"409 conflicts during convergence", "", per(func(r Record) float64 { return r.Op.Metrics.Conflicts }), nil, nil},
		{"writes in the 60 s after convergence", "", per(func(r Record) float64 { return r.Steady.Total() }), targetSteady, nil},
		{"manager heap in use at N (after GC)", "MiB", per(func(r Record) float64 { return r.MemoryN.HeapInuse / mib }), nil, nil},
		{"manager RSS at N", "MiB", per(func(r Record) float64 { return r.MemoryN.RSS / mib }), nil, nil},
		{"heap per Drink with its ConfigMap (0 -> N)", "KiB", per(func(r Record) float64 { return (r.MemoryN.HeapInuse - r.Memory0.HeapInuse) / n / kib }), targetKiB, nil},
		{"LIST all via v1 (storage)", "ms", per(func(r Record) float64 { return r.Lists.V1 * 1e3 }), nil, nil},
		{"LIST all via v1alpha1 (conversion webhook)", "ms", per(func(r Record) float64 { return r.Lists.V1alpha1 * 1e3 }), nil, nil},
		{"LIST v1alpha1 / v1", "", per(func(r Record) float64 { return r.Lists.V1alpha1 / r.Lists.V1 }), targetList, nil},
		{"admission p50, one create at a time (API server, interpolated)", "ms", per(func(r Record) float64 { return r.Quiet.Admission.P50 * 1e3 }), nil, nil},
		{"admission p99, one create at a time (API server, interpolated)", "ms", per(func(r Record) float64 { return r.Quiet.Admission.P99 * 1e3 }), targetAdmission, nil},
		{"admission calls <= 5 ms, one at a time (API server, exact)", "%", per(func(r Record) float64 { return r.Quiet.Admission.Within5ms * 100 }), nil, nil},
		{"webhook calls handled <= 10 ms, one at a time (manager, exact)", "%", per(func(r Record) float64 { return r.Quiet.Admission.ServedWithin10ms * 100 }), nil, nil},
		{"whole Drink create p50, one at a time (client, exact)", "ms", per(func(r Record) float64 { return r.Quiet.CreateP50 * 1e3 }), nil, nil},
		{"whole Drink create p99, one at a time (client, exact; bounds admission)", "ms", per(func(r Record) float64 { return r.Quiet.CreateP99 * 1e3 }), targetAdmission, nil},
		{"admission p50, during T_op (API server)", "ms", per(func(r Record) float64 { return r.Op.Metrics.Admission.P50 * 1e3 }), nil, nil},
		{"admission p99, during T_op (API server)", "ms", per(func(r Record) float64 { return r.Op.Metrics.Admission.P99 * 1e3 }), nil, nil},
		{"admission calls <= 25 ms, during T_op (API server, exact)", "%", per(func(r Record) float64 { return r.Op.Metrics.Admission.Within25ms * 100 }), nil, nil},
		{"machine CPU busy during T_base (2 cores = 100%)", "%", per(func(r Record) float64 { return r.Base.Metrics.MachineBusy * 100 }), nil, nil},
		{"machine CPU busy during T_op", "%", per(func(r Record) float64 { return r.Op.Metrics.MachineBusy * 100 }), nil, nil},
		{"kube-apiserver CPU during T_base", "s", per(func(r Record) float64 { return r.Base.Metrics.APIServerCPU }), nil, nil},
		{"kube-apiserver CPU during T_op", "s", per(func(r Record) float64 { return r.Op.Metrics.APIServerCPU }), nil, nil},
		{"manager CPU during T_base (webhooks only)", "s", per(func(r Record) float64 { return r.Base.Metrics.ManagerCPU }), nil, nil},
		{"manager CPU during T_op (webhooks and reconciles)", "s", per(func(r Record) float64 { return r.Op.Metrics.ManagerCPU }), nil, nil},
		{"bench process CPU during T_base (the plain client)", "s", per(func(r Record) float64 { return r.Base.Metrics.BenchCPU }), nil, nil},
		{"bench process CPU during T_op (creates and observer)", "s", per(func(r Record) float64 { return r.Op.Metrics.BenchCPU }), nil, nil},
		{"SIGTERM of the leader: old leader released the Lease", "s", per(func(r Record) float64 { return r.Term.ReleasedSeconds }), nil, nil},
		{"SIGTERM of the leader: new leader holds the Lease", "s", per(func(r Record) float64 { return r.Term.LeaseSeconds }), nil, nil},
		{"SIGTERM of the leader: new leader reconciles", "s", per(func(r Record) float64 { return r.Term.ReconcileSeconds }), targetHandover, nil},
		{"SIGKILL of the leader: new leader holds the Lease", "s", per(func(r Record) float64 { return r.Kill.LeaseSeconds }), nil, nil},
		{"SIGKILL of the leader: new leader reconciles", "s", per(func(r Record) float64 { return r.Kill.ReconcileSeconds }), nil, nil},
	}
	// Records made before the limit and the paginated LISTs have neither.
	if recs[0].MemoryLimit > 0 {
		rows = append(rows,
			row{"manager RSS at N, share of config/manager's memory limit", "%", per(func(r Record) float64 { return r.MemoryN.RSS / r.MemoryLimit * 100 }), targetLimitShare, nil},
			row{"LIST pages (kubectl's 500 per page)", "", per(func(r Record) float64 { return float64(r.Lists.Pages) }), nil, nil},
			row{"manager RSS before the LISTs", "MiB", per(func(r Record) float64 { return r.Lists.RSSBefore / mib }), nil, nil},
			row{"manager peak RSS during the v1alpha1 LISTs (it converts every page)", "MiB", per(func(r Record) float64 { return r.Lists.PeakRSSV1alpha1 / mib }), nil, nil},
			row{"that peak, share of config/manager's memory limit", "%", per(func(r Record) float64 { return r.Lists.PeakRSSV1alpha1 / r.MemoryLimit * 100 }), targetLimitShare, nil},
		)
	}
	// Records made before the unpaginated LIST have none.
	if recs[0].Lists.Unpaginated > 0 {
		rows = append(rows,
			row{"one unpaginated v1alpha1 LIST of every Drink (one ConversionReview)", "s", per(func(r Record) float64 { return r.Lists.Unpaginated }), nil, nil},
			row{"manager peak RSS during it", "MiB", per(func(r Record) float64 { return r.Lists.PeakRSSUnpaginated / mib }), nil, nil},
			row{"that peak, share of config/manager's memory limit", "%", per(func(r Record) float64 { return r.Lists.PeakRSSUnpaginated / r.MemoryLimit * 100 }), targetLimitShare, nil},
		)
	}
	// Records made before the scale measures have none of them.
	if recs[0].Restart.Reconciles > 0 {
		rows = append(rows, scaleRows(recs[0].N, per)...)
	}
	return rows
}

// scaleRows are the scale measures: the SIGKILL handover's full revisit,
// the restart, the OperatorConfig edit and the admission tail.
func scaleRows(n int, per func(func(Record) float64) []float64) []row {
	// What the webhooks add at p99 is the median p99 with them minus the
	// median p99 without. The median of the per-run differences would
	// pair each run's tail with its own baseline's, and a baseline whose
	// p99 was itself slow would hide a slow run with the webhooks.
	tailDiff := SpreadOf(per(func(r Record) float64 { return r.Tail.Hooks.P99 * 1e3 })).Median -
		SpreadOf(per(func(r Record) float64 { return r.Tail.NoHooks.P99 * 1e3 })).Median
	rows := []row{
		{"SIGKILL of the leader: new leader reconciled every Drink, queue empty", "s", per(func(r Record) float64 { return r.Kill.AllReconciledSeconds }), nil, nil},
		{"SIGKILL of the leader: Drink and ConfigMap writes beyond the probe's 3", "", per(func(r Record) float64 { return operandWrites(r.Kill.Writes) - probeWrites }), targetNoWrites, nil},
		{"restart on N converged Drinks: ready (caches synced)", "s", per(func(r Record) float64 { return r.Restart.ReadySeconds }), nil, nil},
		{"restart: holds the Lease", "s", per(func(r Record) float64 { return r.Restart.LeaderSeconds }), nil, nil},
		{"restart: every Drink reconciled once", "s", per(func(r Record) float64 { return r.Restart.ReconciledSeconds }), nil, nil},
		{"restart: queue drained", "s", per(func(r Record) float64 { return r.Restart.DrainedSeconds }), nil, nil},
		{"restart: reconciles until drained", "", per(func(r Record) float64 { return r.Restart.Reconciles }), nil, nil},
		{"restart: Drink and ConfigMap writes", "", per(func(r Record) float64 { return operandWrites(r.Restart.Writes) }), targetNoWrites, nil},
		{"restart: all writes but Leases", "", per(func(r Record) float64 { return r.Restart.Writes.Total() }), nil, nil},
		{"edit to Unmanaged: every Drink revisited, queue drained", "s", per(func(r Record) float64 { return r.Edit.UnmanagedSeconds }), nil, nil},
		{"edit to Unmanaged: Drink and ConfigMap writes (N status patches by design)", "", per(func(r Record) float64 { return operandWrites(r.Edit.UnmanagedWrites) }), nil, nil},
		{"edit back to Managed: every Drink revisited, queue drained", "s", per(func(r Record) float64 { return r.Edit.DrainSeconds }), nil, nil},
		{"edit back to Managed: reconciles until drained", "", per(func(r Record) float64 { return r.Edit.ManagedReconciles }), nil, nil},
		{"edit back to Managed: Drink and ConfigMap writes beyond N status patches, the probe's 3 and the config record's 1", "", per(func(r Record) float64 {
			return operandWrites(r.Edit.ManagedWrites) - float64(n) - probeWrites - recordWrites
		}), targetNoWrites, nil},
		{"edit back to Managed: a Drink created right after it, time to Ready", "s", per(func(r Record) float64 { return r.Edit.ProbeReadySeconds }), targetProbe, nil},
		{"Drink create p50, one at a time, 1000 creates, with webhooks (client, exact)", "ms", per(func(r Record) float64 { return r.Tail.Hooks.P50 * 1e3 }), nil, nil},
		{"Drink create p50, the same without admission webhooks", "ms", per(func(r Record) float64 { return r.Tail.NoHooks.P50 * 1e3 }), nil, nil},
		{"Drink create p99, with webhooks (client, exact)", "ms", per(func(r Record) float64 { return r.Tail.Hooks.P99 * 1e3 }), nil, nil},
		{"Drink create p99, without admission webhooks", "ms", per(func(r Record) float64 { return r.Tail.NoHooks.P99 * 1e3 }), nil, nil},
		{tailDiffRow, "ms", per(func(r Record) float64 { return (r.Tail.Hooks.P99 - r.Tail.NoHooks.P99) * 1e3 }), targetTailDiff, &tailDiff},
		{"admission webhook calls per create, with webhooks (API server)", "", per(func(r Record) float64 { return r.Tail.Hooks.AdmissionCalls }), nil, nil},
		{"conversion webhook calls per create, with webhooks (API server)", "", per(func(r Record) float64 { return r.Tail.Hooks.ConversionCalls }), nil, nil},
		{"conversion webhook calls per create, without admission webhooks", "", per(func(r Record) float64 { return r.Tail.NoHooks.ConversionCalls }), nil, nil},
	}
	return rows
}

// tailDiffRow names the measure whose figure is a difference of medians.
const tailDiffRow = "webhooks add at p99 (median p99 with them minus median p99 without; min - max of the per-run differences)"

// Report prints, for each N, the table of every measure (median, min and
// max over the runs) with its target, the ceiling sweep, the reconcile
// concurrency sweep and the writes seen.
func Report(w io.Writer, recs []Record) {
	byN := map[int][]Record{}
	for _, r := range recs {
		byN[r.N] = append(byN[r.N], r)
	}
	ns := make([]int, 0, len(byN))
	for n := range byN {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	for _, n := range ns {
		reportN(w, byN[n])
	}
	// The slope from 10,000 to 50,000 Drinks, has its own target;
	// the earlier one spans the smallest and largest N otherwise.
	lo, hi := byN[10000], byN[50000]
	if len(ns) >= 2 && (lo == nil || hi == nil || ns[0] != 10000 || ns[len(ns)-1] != 50000) {
		reportSlope(w, byN[ns[0]], byN[ns[len(ns)-1]], targetKiB)
	}
	if lo != nil && hi != nil {
		reportSlope(w, lo, hi, targetSlope50k)
	}
}

func reportN(w io.Writer, recs []Record) {
	fmt.Fprintf(w, "\n### N = %d Drinks (%d runs)\n\n", recs[0].N, len(recs))
	fmt.Fprintln(w, "| measure | unit | median | min | max | target | status |")
	fmt.Fprintln(w, "| --- | --- | ---: | ---: | ---: | --- | --- |")
	for _, r := range rowsFor(recs) {
		s := SpreadOf(r.values)
		if r.center != nil {
			s.Median = *r.center
		}
		t, status := "", ""
		if r.target != nil {
			t, status = r.target.Text, "met"
			if s.Median > r.target.Max {
				status = "MISSED"
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", r.name, r.unit, format(s.Median), format(s.Min), format(s.Max), t, status)
	}
	reportCeiling(w, recs)
	reportSweep(w, recs)
	fmt.Fprintln(w, "\nWrites counted by the API server (verb resource/subresource=count), per run:")
	for i, r := range recs {
		ops := r.Op.Metrics.Writes
		fmt.Fprintf(w, "- run %d, %s: during T_op: %s; in the window after: %s\n", i+1, r.Date, ops, r.Steady)
		if r.Restart.Reconciles > 0 {
			fmt.Fprintf(w, "  restart: %s; to Unmanaged: %s; back to Managed (with the probe): %s; SIGKILL handover (with the probe): %s\n",
				r.Restart.Writes, r.Edit.UnmanagedWrites, r.Edit.ManagedWrites, r.Kill.Writes)
		}
	}
}

func reportCeiling(w io.Writer, recs []Record) {
	fmt.Fprintln(w, "\nCeiling sweep: 1 KiB ConfigMap creates by a plain client (medians over runs)")
	fmt.Fprintln(w, "\n| W | creates/s | p50 ms | p99 ms |")
	fmt.Fprintln(w, "| ---: | ---: | ---: | ---: |")
	byW := groupBy(recs, func(r Record) []CeilingStep { return r.Ceiling }, func(s CeilingStep) int { return s.Workers })
	for _, wk := range sortedKeys(byW) {
		steps := byW[wk]
		fmt.Fprintf(w, "| %d | %s | %s | %s |\n", wk,
			medianOf(steps, func(s CeilingStep) float64 { return s.Rate }),
			medianOf(steps, func(s CeilingStep) float64 { return s.P50 * 1e3 }),
			medianOf(steps, func(s CeilingStep) float64 { return s.P99 * 1e3 }))
	}
}

func reportSweep(w io.Writer, recs []Record) {
	fmt.Fprintln(w, "\nReconcile concurrency sweep (each on a fresh control plane; medians over runs)")
	fmt.Fprintln(w, "\n| K | T_op s | R | operator writes/Drink | 409s |")
	fmt.Fprintln(w, "| ---: | ---: | ---: | ---: | ---: |")
	byK := groupBy(recs, func(r Record) []SweepPoint { return r.Sweep }, func(p SweepPoint) int { return p.K })
	n := float64(recs[0].N)
	for _, k := range sortedKeys(byK) {
		pts := byK[k]
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s |\n", k,
			medianOf(pts, func(p SweepPoint) float64 { return p.Op.Seconds }),
			medianOf(pts, func(p SweepPoint) float64 { return p.R }),
			medianOf(pts, func(p SweepPoint) float64 { return operatorWrites(p.Op) / n }),
			medianOf(pts, func(p SweepPoint) float64 { return p.Op.Metrics.Conflicts }))
	}
}

// groupBy collects the items of every record by key.
func groupBy[T any](recs []Record, items func(Record) []T, key func(T) int) map[int][]T {
	out := map[int][]T{}
	for _, r := range recs {
		for _, it := range items(r) {
			out[key(it)] = append(out[key(it)], it)
		}
	}
	return out
}

// medianOf formats the median of f over items.
func medianOf[T any](items []T, f func(T) float64) string {
	xs := make([]float64, len(items))
	for i, it := range items {
		xs[i] = f(it)
	}
	return format(SpreadOf(xs).Median)
}

// reportSlope is the memory per Drink between the smallest and largest N,
// from the median heaps: it leaves out what the manager holds whatever the
// number of Drinks.
func reportSlope(w io.Writer, lo, hi []Record, tgt *target) {
	heap := func(recs []Record) float64 {
		var xs []float64
		for _, r := range recs {
			xs = append(xs, r.MemoryN.HeapInuse)
		}
		return SpreadOf(xs).Median
	}
	slope := (heap(hi) - heap(lo)) / float64(hi[0].N-lo[0].N) / 1024
	status := "met"
	if slope > tgt.Max {
		status = "MISSED"
	}
	fmt.Fprintf(w, "\nHeap per Drink with its ConfigMap, slope of the median heaps from N=%d to N=%d: %s KiB (target %s KiB): %s\n",
		lo[0].N, hi[0].N, format(slope), tgt.Text, status)
}

func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp.Compare[int])
	return keys
}

// ParseInts parses a comma-separated list of positive integers.
func ParseInts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%q is not a list of positive integers", s)
		}
		out = append(out, v)
	}
	return out, nil
}

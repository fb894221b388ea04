package benchfig

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/example/myoperator/test/bench"
)

// The results files of the runs that are not make bench-full's; every
// other .jsonl of the folder holds bench.Record lines.
const (
	ShardsFile = "shards.jsonl"
	FaultsFile = "shard-faults.jsonl"
	OutageFile = "config-outage.jsonl"
	// ToolchainFile holds -shards runs of one build against another
	// (test/bench/results/HISTORY.md), kept apart from ShardsFile so that
	// the tables of the newest runs show the project's own builds.
	ToolchainFile = "toolchain.jsonl"
)

// Results are the records of a results folder.
type Results struct {
	Dir string
	// Runs are make bench's and make bench-full's records, by file name.
	Runs      map[string][]bench.Record
	Shards    []bench.ShardRecord
	Toolchain []bench.ShardRecord
	Faults    []bench.ShardFaultRecord
	Outages   []bench.OutageRecord
}

// Load reads every results file of dir.
func Load(dir string) (*Results, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	r := &Results{Dir: dir, Runs: map[string][]bench.Record{}}
	for _, p := range paths {
		switch name := filepath.Base(p); name {
		case ShardsFile:
			r.Shards, err = bench.ReadJSONLines[bench.ShardRecord](p)
		case ToolchainFile:
			r.Toolchain, err = bench.ReadJSONLines[bench.ShardRecord](p)
		case FaultsFile:
			r.Faults, err = bench.ReadJSONLines[bench.ShardFaultRecord](p)
		case OutageFile:
			r.Outages, err = bench.ReadJSONLines[bench.OutageRecord](p)
		default:
			r.Runs[name], err = bench.ReadJSONLines[bench.Record](p)
		}
		if err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Source is the record a figure was read from: its file, the dates of
// its first and last run, and where it was made when the record says.
type Source struct {
	File        string
	First, Last string
	Runs        int
	bench.Made
}

// Day is the date of a record without its time.
func Day(date string) string { d, _, _ := strings.Cut(date, "T"); return d }

// Short is a commit as a reader looks it up: seven characters, and the
// record's "+dirty" kept.
func Short(commit string) string {
	c, dirty := strings.CutSuffix(commit, "+dirty")
	if len(c) > 7 {
		c = c[:7]
	}
	if dirty {
		c += "+dirty"
	}
	return c
}

// String names the record for a reader: "test/bench/results/shards.jsonl,
// 2026-12-03, `b42b9cb`".
func (s Source) String() string {
	out := s.File + ", " + Day(s.First)
	if s.Runs > 1 {
		out = fmt.Sprintf("%s, %d runs, %s to %s", s.File, s.Runs, Day(s.First), Day(s.Last))
	}
	if s.Commit != "" {
		out += ", `" + Short(s.Commit) + "`"
	}
	return out
}

// Figure is one named figure and where it was read.
type Figure struct {
	Name   string
	Value  float64
	Source Source
}

const mib = 1 << 20

// runFields are the measures of make bench-full's table (bench.Measures)
// a figure may name; test/bench/report.go spells them out.
var runFields = map[string]string{
	"R":                  "R = T_op / T_base",
	"baseS":              "T_base: plain client, the operator's writes",
	"opS":                "T_op: operator converges (best K)",
	"writesPerDrink":     "operator writes per Drink (minimum 2: ConfigMap, status)",
	"conflicts":          "409 conflicts during convergence",
	"steadyWrites":       "writes in the 60 s after convergence",
	"heapMiB":            "manager heap in use at N (after GC)",
	"rssMiB":             "manager RSS at N",
	"rssLimitPct":        "manager RSS at N, share of config/manager's memory limit",
	"listRatio":          "LIST v1alpha1 / v1",
	"peakListMiB":        "manager peak RSS during the v1alpha1 LISTs (it converts every page)",
	"peakListPct":        "that peak, share of config/manager's memory limit",
	"busyBasePct":        "machine CPU busy during T_base (2 cores = 100%)",
	"busyOpPct":          "machine CPU busy during T_op",
	"apiserverBaseS":     "kube-apiserver CPU during T_base",
	"apiserverOpS":       "kube-apiserver CPU during T_op",
	"managerBaseS":       "manager CPU during T_base (webhooks only)",
	"managerOpS":         "manager CPU during T_op (webhooks and reconciles)",
	"clientBaseS":        "bench process CPU during T_base (the plain client)",
	"clientOpS":          "bench process CPU during T_op (creates and observer)",
	"termLeaseS":         "SIGTERM of the leader: new leader holds the Lease",
	"termReconcileS":     "SIGTERM of the leader: new leader reconciles",
	"killLeaseS":         "SIGKILL of the leader: new leader holds the Lease",
	"killReconcileS":     "SIGKILL of the leader: new leader reconciles",
	"killAllS":           "SIGKILL of the leader: new leader reconciled every Drink, queue empty",
	"killExtraWrites":    "SIGKILL of the leader: Drink and ConfigMap writes beyond the probe's 3",
	"restartReadyS":      "restart on N converged Drinks: ready (caches synced)",
	"restartLeaseS":      "restart: holds the Lease",
	"restartReconciledS": "restart: every Drink reconciled once",
	"restartWrites":      "restart: Drink and ConfigMap writes",
	"editDrainS":         "edit back to Managed: every Drink revisited, queue drained",
	"editExtraWrites":    "edit back to Managed: Drink and ConfigMap writes beyond N status patches, the probe's 3 and the config record's 1",
	"editProbeS":         "edit back to Managed: a Drink created right after it, time to Ready",
	"hooksP50ms":         "Drink create p50, one at a time, 1000 creates, with webhooks (client, exact)",
	"noHooksP50ms":       "Drink create p50, the same without admission webhooks",
	"hooksP99ms":         "Drink create p99, with webhooks (client, exact)",
	"noHooksP99ms":       "Drink create p99, without admission webhooks",
	"tailAddMs":          bench.TailDiffMeasure,
	"conversionCalls":    "conversion webhook calls per create, with webhooks (API server)",
	"conversionCallsNo":  "conversion webhook calls per create, without admission webhooks",
}

// runExtra are figures of a full run that its table does not print.
var runExtra = map[string]func(bench.Record) float64{
	// What the manager holds before the first Drink.
	"heapIdleMiB": func(r bench.Record) float64 { return r.Memory0.HeapInuse / mib },
	"limitMiB":    func(r bench.Record) float64 { return r.MemoryLimit / mib },
}

// shardFields are a -shards record's figures, one per replica or one.
var shardFields = map[string]func(bench.ShardRun) []float64{
	"convergedS":      func(r bench.ShardRun) []float64 { return []float64{r.Seconds} },
	"createsS":        func(r bench.ShardRun) []float64 { return []float64{r.CreateSeconds} },
	"heapMiB":         func(r bench.ShardRun) []float64 { return scaled(r.HeapInuse, mib) },
	"rssMiB":          func(r bench.ShardRun) []float64 { return scaled(r.RSS, mib) },
	"rssLimitPct":     func(r bench.ShardRun) []float64 { return scaled(r.RSS, r.MemoryLimit/100) },
	"readMiB":         func(r bench.ShardRun) []float64 { return scaled(r.DrinkReadBytes, mib) },
	"unselected":      func(r bench.ShardRun) []float64 { return r.Unselected },
	"steadyWrites":    func(r bench.ShardRun) []float64 { return []float64{r.Steady.Total()} },
	"apiserverCPUs":   func(r bench.ShardRun) []float64 { return []float64{r.APIServerCPU} },
	"replicaCPUs":     func(r bench.ShardRun) []float64 { return r.ReplicaCPU },
	"apiserverRSSGiB": func(r bench.ShardRun) []float64 { return []float64{r.APIServerRSS / (1 << 30)} },
	"limitMiB":        func(r bench.ShardRun) []float64 { return []float64{r.MemoryLimit / mib} },
}

// killFields are a -shard-kill record's figures.
var killFields = map[string]func(bench.ShardKill) float64{
	"convergedS":    func(k bench.ShardKill) float64 { return k.Seconds },
	"killedBuckets": func(k bench.ShardKill) float64 { return float64(k.KilledBuckets) },
	"takeoverS":     func(k bench.ShardKill) float64 { return k.TakeoverSeconds },
	"recoverS":      func(k bench.ShardKill) float64 { return k.RecoverSeconds },
	"beforeP50S":    func(k bench.ShardKill) float64 { return k.Baseline.P50 },
	"beforeP99S":    func(k bench.ShardKill) float64 { return k.Baseline.P99 },
	"beforeMaxS":    func(k bench.ShardKill) float64 { return k.Baseline.Max },
	"keptP50S":      func(k bench.ShardKill) float64 { return k.Others.P50 },
	"keptP99S":      func(k bench.ShardKill) float64 { return k.Others.P99 },
	"keptMaxS":      func(k bench.ShardKill) float64 { return k.Others.Max },
	"keptCount":     func(k bench.ShardKill) float64 { return float64(k.Others.Count) },
	"keptOver2s":    func(k bench.ShardKill) float64 { return float64(k.Others.Over2s) },
	"movedP99S":     func(k bench.ShardKill) float64 { return k.Moved.P99 },
	"movedMaxS":     func(k bench.ShardKill) float64 { return k.Moved.Max },
	"killedP50S":    func(k bench.ShardKill) float64 { return k.Killed.P50 },
	"killedP99S":    func(k bench.ShardKill) float64 { return k.Killed.P99 },
	"killedMaxS":    func(k bench.ShardKill) float64 { return k.Killed.Max },
	"written":       func(k bench.ShardKill) float64 { return float64(k.Audit.Written) },
	"doubleWrites":  func(k bench.ShardKill) float64 { return float64(k.Audit.Stale) },
	"steadyWrites":  func(k bench.ShardKill) float64 { return k.Steady.Total() },
}

// rescaleFields are a -shard-scale record's figures.
var rescaleFields = map[string]func(bench.ShardScale) (float64, error){
	"convergedS":   func(s bench.ShardScale) (float64, error) { return s.Seconds, nil },
	"rebalance1S":  func(s bench.ShardScale) (float64, error) { return nth(s.Rebalance, 0) },
	"rebalance2S":  func(s bench.ShardScale) (float64, error) { return nth(s.Rebalance, 1) },
	"rebalance3S":  func(s bench.ShardScale) (float64, error) { return nth(s.Rebalance, 2) },
	"written":      func(s bench.ShardScale) (float64, error) { return float64(s.Audit.Written), nil },
	"doubleWrites": func(s bench.ShardScale) (float64, error) { return float64(s.Audit.Stale), nil },
	"refused":      func(s bench.ShardScale) (float64, error) { return float64(s.Audit.Refused), nil },
}

// outageFields are an -outage record's figures.
var outageFields = map[string]func(bench.OutageRecord) float64{
	"convergeS":          func(o bench.OutageRecord) float64 { return o.ConvergeSeconds },
	"listV1S":            func(o bench.OutageRecord) float64 { return o.Lists.V1 },
	"listV1alpha1S":      func(o bench.OutageRecord) float64 { return o.Lists.V1alpha1 },
	"peakListMiB":        func(o bench.OutageRecord) float64 { return o.Lists.PeakRSSV1alpha1 / mib },
	"unpaginatedS":       func(o bench.OutageRecord) float64 { return o.Lists.Unpaginated },
	"unpaginatedPeakMiB": func(o bench.OutageRecord) float64 { return o.Lists.PeakRSSUnpaginated / mib },
	"unpaginatedPeakPct": func(o bench.OutageRecord) float64 { return o.Lists.PeakRSSUnpaginated / o.MemoryLimit * 100 },
	"writes":             func(o bench.OutageRecord) float64 { return o.Outage.Writes.Total() },
	"statusPatches":      func(o bench.OutageRecord) float64 { return o.Outage.Writes["PATCH drinks/status"] },
	"events":             func(o bench.OutageRecord) float64 { return o.Outage.Events },
	"recordWrites":       func(o bench.OutageRecord) float64 { return float64(o.Outage.RecordWrites) },
	"beyondRecord":       func(o bench.OutageRecord) float64 { return o.Outage.BeyondRecord },
	"deleteQuietS":       func(o bench.OutageRecord) float64 { return o.Outage.DeleteQuietSeconds },
	"recreateQuietS":     func(o bench.OutageRecord) float64 { return o.Outage.RecreateQuietSeconds },
}

func scaled(xs []float64, by float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = x / by
	}
	return out
}

func nth(xs []float64, i int) (float64, error) {
	if i >= len(xs) {
		return 0, fmt.Errorf("the record has %d rebalances", len(xs))
	}
	return xs[i], nil
}

var (
	sizeSel  = regexp.MustCompile(`^n([0-9]+)(?:to([0-9]+))?(?:@([0-9a-f]{7,40}))?$`)
	shardSel = regexp.MustCompile(`^n([0-9]+)r([0-9]+)((?:-(?:gateoff|fenceidle|direct|http2))*)(?:@([0-9a-f]{7,40}))?$`)
)

// Get reads the named figure (doc.go says how names are made).
func (r *Results) Get(name string) (Figure, error) {
	parts := strings.Split(name, ".")
	if len(parts) < 3 || len(parts) > 4 {
		return Figure{}, fmt.Errorf("%q is not kind.selector.field[.stat]", name)
	}
	kind, sel, field, stat := parts[0], parts[1], parts[2], ""
	if len(parts) == 4 {
		stat = parts[3]
	}
	f := Figure{Name: name}
	var values []float64
	var err error
	switch kind {
	case "run":
		values, f.Source, err = r.run(sel, field)
		if err == nil && stat == "" && len(values) > 1 {
			// A run set's figure is its median, or for the webhooks'
			// p99 the difference of the medians: the table's figure.
			stat = "table"
		}
	case "shards":
		values, f.Source, err = r.shard(sel, field)
	case "growth":
		values, f.Source, err = r.growth(sel, field)
	case "kill", "rescale", "outage":
		var v float64
		v, f.Source, err = r.single(kind, sel, field)
		values = []float64{v}
	default:
		err = fmt.Errorf("no kind %q (run, shards, growth, kill, rescale, outage)", kind)
	}
	if err != nil {
		return Figure{}, fmt.Errorf("%s: %w", name, err)
	}
	if f.Value, err = reduce(values, stat, r, sel, field); err != nil {
		return Figure{}, fmt.Errorf("%s: %w", name, err)
	}
	return f, nil
}

// reduce is the stat of several values: the median, min, max or sum; one
// value needs none.
func reduce(values []float64, stat string, r *Results, sel, field string) (float64, error) {
	s := bench.SpreadOf(values)
	switch stat {
	case "":
		if len(values) != 1 {
			return 0, fmt.Errorf("%d values (one per replica): name one with .min, .max, .median or .sum", len(values))
		}
		return values[0], nil
	case "table":
		recs, _, err := r.runsAt(sel)
		if err != nil {
			return 0, err
		}
		for _, m := range bench.Measures(recs) {
			if m.Name == runFields[field] {
				return m.Spread.Median, nil
			}
		}
		return s.Median, nil
	case "median":
		return s.Median, nil
	case "min":
		return s.Min, nil
	case "max":
		return s.Max, nil
	case "sum":
		var t float64
		for _, v := range values {
			t += v
		}
		return t, nil
	}
	return 0, fmt.Errorf("no stat %q (min, max, median, sum)", stat)
}

// runsAt are the newest set of make bench-full's runs at the selector's N.
func (r *Results) runsAt(sel string) ([]bench.Record, Source, error) {
	m := sizeSel.FindStringSubmatch(sel)
	if m == nil || m[2] != "" || m[3] != "" {
		return nil, Source{}, fmt.Errorf("selector %q is not n<N>", sel)
	}
	n, _ := strconv.Atoi(m[1])
	return r.RunsAt(n)
}

// RunsAt are the records at n of the results file whose record at n is
// the newest of all files: the newest invocation of make bench-full (or
// make bench) that measured n.
func (r *Results) RunsAt(n int) ([]bench.Record, Source, error) {
	var best string
	var bestDate string
	for _, name := range slices.Sorted(maps.Keys(r.Runs)) {
		for _, rec := range r.Runs[name] {
			if rec.N == n && rec.Date > bestDate {
				best, bestDate = name, rec.Date
			}
		}
	}
	if best == "" {
		return nil, Source{}, fmt.Errorf("no run at N = %d in %s", n, r.Dir)
	}
	var recs []bench.Record
	for _, rec := range r.Runs[best] {
		if rec.N == n {
			recs = append(recs, rec)
		}
	}
	src := Source{File: filepath.Join(r.Dir, best), First: recs[0].Date, Last: recs[len(recs)-1].Date, Runs: len(recs)}
	return recs, src, nil
}

func (r *Results) run(sel, field string) ([]float64, Source, error) {
	m := sizeSel.FindStringSubmatch(sel)
	if m == nil || m[3] != "" {
		return nil, Source{}, fmt.Errorf("selector %q is not n<N> or n<N>to<M> (a full run's record names no commit)", sel)
	}
	if m[2] != "" {
		if field != "heapSlopeKiB" {
			return nil, Source{}, fmt.Errorf("between two sizes only heapSlopeKiB")
		}
		lo, _ := strconv.Atoi(m[1])
		hi, _ := strconv.Atoi(m[2])
		loRecs, src, err := r.RunsAt(lo)
		if err != nil {
			return nil, Source{}, err
		}
		hiRecs, hiSrc, err := r.RunsAt(hi)
		if err != nil {
			return nil, Source{}, err
		}
		if hiSrc.File != src.File {
			src.File += " and " + hiSrc.File
		}
		src.First, src.Last = min(src.First, hiSrc.First), max(src.Last, hiSrc.Last)
		src.Runs += hiSrc.Runs
		return []float64{bench.HeapSlopeKiB(loRecs, hiRecs)}, src, nil
	}
	recs, src, err := r.runsAt(sel)
	if err != nil {
		return nil, Source{}, err
	}
	if f, ok := runExtra[field]; ok {
		out := make([]float64, len(recs))
		for i, rec := range recs {
			out[i] = f(rec)
		}
		return out, src, nil
	}
	name, ok := runFields[field]
	if !ok {
		return nil, Source{}, fmt.Errorf("no field %q of a full run (%s)", field, fieldNames(runFields)+", "+fieldNames(runExtra))
	}
	for _, m := range bench.Measures(recs) {
		if m.Name == name {
			return m.Values, src, nil
		}
	}
	return nil, Source{}, fmt.Errorf("the runs of %s have no measure %q (made before it was measured)", src.File, name)
}

// growth is the single leader's memory per Drink from make bench-full's
// runs at the smaller N (their median) to -shards' one replica at the
// larger: the sizes beyond what bench-full measures.
func (r *Results) growth(sel, field string) ([]float64, Source, error) {
	m := sizeSel.FindStringSubmatch(sel)
	if m == nil || m[2] == "" || m[3] != "" {
		return nil, Source{}, fmt.Errorf("selector %q is not n<N>to<M>", sel)
	}
	lo, _ := strconv.Atoi(m[1])
	hi, _ := strconv.Atoi(m[2])
	recs, src, err := r.RunsAt(lo)
	if err != nil {
		return nil, Source{}, err
	}
	one, oneSrc, err := r.Shard(fmt.Sprintf("n%dr1", hi))
	if err != nil {
		return nil, Source{}, err
	}
	var of func(bench.Memory) float64
	var leader float64
	switch field {
	case "heapKiB":
		of, leader = func(m bench.Memory) float64 { return m.HeapInuse }, one.HeapInuse[0]
	case "rssKiB":
		of, leader = func(m bench.Memory) float64 { return m.RSS }, one.RSS[0]
	default:
		return nil, Source{}, fmt.Errorf("no field %q of a growth (heapKiB, rssKiB)", field)
	}
	xs := make([]float64, len(recs))
	for i, rec := range recs {
		xs[i] = of(rec.MemoryN)
	}
	src.File += " and " + oneSrc.File
	src.Last, src.Runs, src.Made = oneSrc.Last, src.Runs+1, oneSrc.Made
	return []float64{(leader - bench.SpreadOf(xs).Median) / float64(hi-lo) / 1024}, src, nil
}

// ShardMatch says whether a -shards record is the run a selector names.
func shardMatch(sel string) (func(bench.ShardRecord) bool, error) {
	m := shardSel.FindStringSubmatch(sel)
	if m == nil {
		return nil, fmt.Errorf("selector %q is not n<N>r<replicas>[-gateoff][-fenceidle][-direct][-http2][@commit]", sel)
	}
	n, _ := strconv.Atoi(m[1])
	replicas, _ := strconv.Atoi(m[2])
	gateOff, idle, direct := strings.Contains(m[3], "-gateoff"), strings.Contains(m[3], "-fenceidle"), strings.Contains(m[3], "-direct")
	var flags []string
	if strings.Contains(m[3], "-http2") {
		flags = HTTP2Flags
	}
	commit := m[4]
	return func(s bench.ShardRecord) bool {
		return s.N == n && s.Replicas == replicas && s.FeatureGate == !gateOff && s.FenceIdle == idle &&
			s.DirectWebhooks == direct && slices.Equal(s.ManagerFlags, flags) && strings.HasPrefix(s.Commit, commit)
	}, nil
}

// HTTP2Flags are the manager flags of a run a selector names with
// -http2: the webhook server offered HTTP/2 (bin/bench -manager-flag).
var HTTP2Flags = []string{"--enable-http2"}

// HTTP1Flags are the manager flags of a kill a selector names with
// -http1: the webhook server offered HTTP/1.1 only, as it did by default
// before HTTP/2 (internal/app/app.go).
var HTTP1Flags = []string{"--enable-http2=false"}

// Shard is the newest -shards record the selector names.
func (r *Results) Shard(sel string) (bench.ShardRecord, Source, error) {
	match, err := shardMatch(sel)
	if err != nil {
		return bench.ShardRecord{}, Source{}, err
	}
	var best *bench.ShardRecord
	for i, s := range r.Shards {
		if match(s) && (best == nil || s.Date > best.Date) {
			best = &r.Shards[i]
		}
	}
	if best == nil {
		return bench.ShardRecord{}, Source{}, fmt.Errorf("no -shards run %s in %s", sel, filepath.Join(r.Dir, ShardsFile))
	}
	return *best, Source{File: filepath.Join(r.Dir, ShardsFile), First: best.Date, Last: best.Date, Runs: 1, Made: best.Made}, nil
}

func (r *Results) shard(sel, field string) ([]float64, Source, error) {
	f, ok := shardFields[field]
	if !ok {
		return nil, Source{}, fmt.Errorf("no field %q of a -shards run (%s)", field, fieldNames(shardFields))
	}
	s, src, err := r.Shard(sel)
	if err != nil {
		return nil, Source{}, err
	}
	values := f(s.ShardRun)
	if len(values) == 0 {
		return nil, Source{}, fmt.Errorf("the run of %s (%s) did not record %s", src.File, s.Date, field)
	}
	return values, src, nil
}

// Kill is the newest -shard-kill record at n (of the commit, when one is
// given).
func (r *Results) Kill(n int, commit string) (bench.ShardKill, Source, error) {
	return r.KillWith(n, commit, nil)
}

// KillWith is the newest -shard-kill record at n whose replicas had the
// manager flags flags (-manager-flag; nil for the install's own).
func (r *Results) KillWith(n int, commit string, flags []string) (bench.ShardKill, Source, error) {
	f, src, err := r.newestFault("-shard-kill", n, commit, func(f bench.ShardFaultRecord) (string, bool) {
		if f.Kill == nil || f.Kill.N != n || !slices.Equal(f.Kill.ManagerFlags, flags) {
			return "", false
		}
		return f.Kill.Date, true
	})
	if err != nil {
		return bench.ShardKill{}, src, err
	}
	return *f.Kill, src, nil
}

// Scale is the newest -shard-scale record at n (of the commit, when one is
// given).
func (r *Results) Scale(n int, commit string) (bench.ShardScale, Source, error) {
	f, src, err := r.newestFault("-shard-scale", n, commit, func(f bench.ShardFaultRecord) (string, bool) {
		if f.Scale == nil || f.Scale.N != n {
			return "", false
		}
		return f.Scale.Date, true
	})
	if err != nil {
		return bench.ShardScale{}, src, err
	}
	return *f.Scale, src, nil
}

// newestFault is the latest record of FaultsFile that match says is of
// the kind at n (and the date it gives), of the commit when one is given.
func (r *Results) newestFault(kind string, n int, commit string, match func(bench.ShardFaultRecord) (string, bool)) (*bench.ShardFaultRecord, Source, error) {
	var best *bench.ShardFaultRecord
	var bestDate string
	for i, f := range r.Faults {
		if date, ok := match(f); ok && strings.HasPrefix(f.Commit, commit) && (best == nil || date > bestDate) {
			best, bestDate = &r.Faults[i], date
		}
	}
	file := filepath.Join(r.Dir, FaultsFile)
	if best == nil {
		return nil, Source{}, fmt.Errorf("no %s run at N = %d in %s", kind, n, file)
	}
	return best, Source{File: file, First: bestDate, Last: bestDate, Runs: 1, Made: best.Made}, nil
}

// Outage is the newest -outage record at n (of the commit, when one is
// given).
func (r *Results) Outage(n int, commit string) (bench.OutageRecord, Source, error) {
	var best *bench.OutageRecord
	for i, o := range r.Outages {
		if o.N == n && strings.HasPrefix(o.Commit, commit) && (best == nil || o.Date > best.Date) {
			best = &r.Outages[i]
		}
	}
	if best == nil {
		return bench.OutageRecord{}, Source{}, fmt.Errorf("no -outage run at N = %d in %s", n, filepath.Join(r.Dir, OutageFile))
	}
	return *best, Source{File: filepath.Join(r.Dir, OutageFile), First: best.Date, Last: best.Date, Runs: 1, Made: best.Made}, nil
}

func (r *Results) single(kind, sel, field string) (float64, Source, error) {
	var flags []string
	if kind == "kill" {
		// n<N>-http1[@commit]: a run with the webhooks over HTTP/1.1.
		if head, tail, ok := strings.Cut(sel, "-http1"); ok && (tail == "" || strings.HasPrefix(tail, "@")) {
			sel, flags = head+tail, HTTP1Flags
		}
	}
	m := sizeSel.FindStringSubmatch(sel)
	if m == nil || m[2] != "" {
		return 0, Source{}, fmt.Errorf("selector %q is not n<N>[@commit] (a kill's may say n<N>-http1)", sel)
	}
	n, _ := strconv.Atoi(m[1])
	switch kind {
	case "kill":
		f, ok := killFields[field]
		if !ok {
			return 0, Source{}, fmt.Errorf("no field %q of a -shard-kill run (%s)", field, fieldNames(killFields))
		}
		k, src, err := r.KillWith(n, m[3], flags)
		return f(k), src, err
	case "rescale":
		f, ok := rescaleFields[field]
		if !ok {
			return 0, Source{}, fmt.Errorf("no field %q of a -shard-scale run (%s)", field, fieldNames(rescaleFields))
		}
		s, src, err := r.Scale(n, m[3])
		if err != nil {
			return 0, Source{}, err
		}
		v, err := f(s)
		return v, src, err
	default:
		f, ok := outageFields[field]
		if !ok {
			return 0, Source{}, fmt.Errorf("no field %q of an -outage run (%s)", field, fieldNames(outageFields))
		}
		o, src, err := r.Outage(n, m[3])
		return f(o), src, err
	}
}

// fieldNames lists a table's fields for a message naming a wrong one.
func fieldNames[V any](m map[string]V) string {
	return strings.Join(slices.Sorted(maps.Keys(m)), ", ")
}

// Auto writes a figure as bin/bench -report does (three significant
// digits, the integer from 100), with thousands separators; a count as
// the integer it is.
func Auto(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return Fixed(v, 0)
	}
	return commas(bench.Format(v))
}

// Fixed writes a figure with d decimals and thousands separators.
func Fixed(v float64, d int) string {
	return commas(strconv.FormatFloat(v, 'f', d, 64))
}

// Decimals is how many decimals a quoted figure is written with.
func Decimals(quoted string) int {
	if _, frac, ok := strings.Cut(quoted, "."); ok {
		return len(frac)
	}
	return 0
}

// Quote is a figure as a document quoting it as precisely as quoted must
// write it: the record's value rounded to the quoted number's decimals,
// thousands separated. A quote equal to it matches the record.
func Quote(quoted string, v float64) string { return Fixed(v, Decimals(quoted)) }

func commas(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	whole, frac, hasFrac := strings.Cut(s, ".")
	var parts []string
	for len(whole) > 3 {
		parts = append([]string{whole[len(whole)-3:]}, parts...)
		whole = whole[:len(whole)-3]
	}
	out := sign + strings.Join(append([]string{whole}, parts...), ",")
	if hasFrac {
		out += "." + frac
	}
	return out
}

// RunFieldNames are the fields of a full run that name a measure of its
// table.
func RunFieldNames() []string { return slices.Sorted(maps.Keys(runFields)) }

// RunMeasure is the name in the table of the measure a field names.
func RunMeasure(field string) string { return runFields[field] }

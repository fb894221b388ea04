package benchfig

import (
	"strings"
	"testing"

	"github.com/example/myoperator/test/bench"
)

// fixture has two sets of full runs at 1,000 (the newer file wins), two
// -shards runs of one replica count (the newer wins unless a commit is
// named) and two kills, the newer with the webhooks over HTTP/1.1 (a
// -manager-flag A/B, which only a selector that names it may cite).
func fixture() *Results {
	run := func(date string, heapMiB, hooks, none float64) bench.Record {
		r := bench.Record{Date: date, N: 1000, R: 1, Restart: bench.RestartResult{Reconciles: 1000}}
		r.MemoryN.HeapInuse = heapMiB * mib
		r.Tail.Hooks.P99, r.Tail.NoHooks.P99 = hooks/1e3, none/1e3
		return r
	}
	shard := func(date, commit string, heaps ...float64) bench.ShardRecord {
		s := bench.ShardRecord{ShardRun: bench.ShardRun{Date: date, N: 50000, Replicas: len(heaps), FeatureGate: true, Seconds: 400}}
		s.Commit = commit
		for _, h := range heaps {
			s.HeapInuse = append(s.HeapInuse, h*mib)
		}
		return s
	}
	kill := bench.ShardKill{Date: "2026-12-04T00:00:00Z", N: 50000, Others: bench.Latency{P99: 1.4237}}
	http1 := bench.ShardKill{Date: "2026-12-05T00:00:00Z", N: 50000, Others: bench.Latency{P99: 0.9}, ManagerFlags: HTTP1Flags}
	return &Results{
		Dir: "results",
		Runs: map[string][]bench.Record{
			"old.jsonl": {run("2026-11-01T00:00:00Z", 30, 9, 5)},
			"new.jsonl": {run("2026-12-01T00:00:00Z", 20, 9, 5), run("2026-12-01T01:00:00Z", 21, 10, 4), run("2026-12-01T02:00:00Z", 22, 50, 3)},
		},
		Shards: []bench.ShardRecord{shard("2026-12-02T00:00:00Z", "aaaaaaa1", 50, 60), shard("2026-12-03T00:00:00Z", "bbbbbbb2+dirty", 55.04, 56.5)},
		Faults: []bench.ShardFaultRecord{{Kill: &kill, Made: bench.Made{Commit: "ccccccc3"}}, {Kill: &http1, Made: bench.Made{Commit: "ddddddd4"}}},
	}
}

func TestGet(t *testing.T) {
	r := fixture()
	for _, tc := range []struct {
		name string
		want float64
		src  string
		err  string
	}{
		{name: "run.n1000.heapMiB", want: 21, src: "results/new.jsonl, 3 runs, 2026-12-01 to 2026-12-01"},
		{name: "run.n1000.heapMiB.max", want: 22},
		// The difference of the medians (10 - 4), not the median of the
		// differences (6 of 4, 6, 47: here the same by chance) nor their mean.
		{name: "run.n1000.tailAddMs", want: 6},
		{name: "run.n1000.tailAddMs.max", want: 47},
		{name: "run.n5000.heapMiB", err: "no run at N = 5000 in results"},
		{name: "run.n1000.rss", err: `no field "rss" of a full run`},
		{name: "shards.n50000r2.heapMiB.max", want: 56.5, src: "results/shards.jsonl, 2026-12-03, `bbbbbbb+dirty`"},
		{name: "shards.n50000r2@aaaaaaa.heapMiB.min", want: 50},
		{name: "shards.n50000r2.heapMiB", err: "2 values (one per replica)"},
		{name: "shards.n50000r4.heapMiB.max", err: "no -shards run n50000r4"},
		{name: "shards.n50000r2-gateoff.heapMiB.max", err: "no -shards run n50000r2-gateoff"},
		{name: "kill.n50000.keptP99S", want: 1.4237, src: "`ccccccc`"},
		{name: "kill.n50000-http1.keptP99S", want: 0.9, src: "`ddddddd`"},
		{name: "kill.n50000-http1@ddddddd.keptP99S", want: 0.9},
		{name: "kill.n50000-http1@ccccccc.keptP99S", err: "no -shard-kill run at N = 50000"},
		{name: "kill.n50000-http3.keptP99S", err: "is not n<N>[@commit]"},
		{name: "kill.n200000.keptP99S", err: "no -shard-kill run at N = 200000"},
		{name: "outage.n50000.writes", err: "no -outage run at N = 50000"},
		{name: "heap.n1000.x", err: `no kind "heap"`},
		{name: "run.n1000", err: "is not kind.selector.field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := r.Get(tc.name)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := f.Value - tc.want; d > 1e-9 || d < -1e-9 {
				t.Errorf("value %v, want %v", f.Value, tc.want)
			}
			if !strings.Contains(f.Source.String(), tc.src) {
				t.Errorf("source %q, want it to hold %q", f.Source, tc.src)
			}
		})
	}
}

// TestQuote: a quote matches when it is the value rounded to its own
// decimals, thousands separated.
func TestQuote(t *testing.T) {
	for _, tc := range []struct {
		quoted string
		value  float64
		want   string
	}{
		{"527", 526.8047, "527"},
		{"526.8", 526.8047, "526.8"},
		{"526", 526.8047, "527"},
		{"1,141", 1140.66, "1,141"},
		{"1141", 1140.66, "1,141"},
		{"2.63", 2.6359, "2.64"},
		{"0", 0.3, "0"},
		{"399,996", 399996, "399,996"},
	} {
		if got := Quote(tc.quoted, tc.value); got != tc.want {
			t.Errorf("Quote(%q, %v) = %q, want %q", tc.quoted, tc.value, got, tc.want)
		}
	}
	for v, want := range map[float64]string{6.3275: "6.33", 140.68: "141", 2089.56: "2,090", 16: "16", 0.4363: "0.44", 17.85: "17.9", -1234.5: "-1,234"} {
		if got := Auto(v); got != want {
			t.Errorf("Auto(%v) = %q, want %q", v, got, want)
		}
	}
}

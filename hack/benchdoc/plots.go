package main

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/example/myoperator/hack/benchdoc/benchfig"
	"github.com/example/myoperator/test/bench"
)

// A plot is drawn from the records alone and written without fonts
// embedded or a date, so that drawing it again from the same records gives
// the same bytes: make verify redraws it and fails on any difference.

// plotSizes are the sizes of make bench-full whose heaps the heap plot
// shows, and of -shards' single leader beyond them.
var (
	plotRunSizes   = []int{1000, 5000, 10000, 50000}
	plotShardSizes = []int{50000, 200000}
	plotKillSizes  = []int{50000, 200000}
)

// palette is fixed, one colour per series in order.
var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
}

// plots draws every plot: file name (under docs/bench) to SVG.
func plots(r *benchfig.Results) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, p := range []struct {
		name string
		draw func(*benchfig.Results) (*plot.Plot, error)
	}{
		{"heap.svg", heapPlot},
		{"convergence.svg", convergencePlot},
	} {
		pl, err := p.draw(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		if out[p.name], err = svg(pl); err != nil {
			return nil, err
		}
	}
	for _, n := range plotKillSizes {
		pl, err := takeoverPlot(r, n)
		if err != nil {
			return nil, fmt.Errorf("takeover at %d: %w", n, err)
		}
		name := fmt.Sprintf("takeover-n%d.svg", n)
		if out[name], err = svg(pl); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func svg(p *plot.Plot) ([]byte, error) {
	c := vgsvg.NewWith(vgsvg.UseWH(16*vg.Centimeter, 10*vg.Centimeter), vgsvg.EmbedFonts(false))
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// heapPlot: the manager's heap after a forced collection against the
// Drinks it caches: make bench-full's medians with their runs' range, and
// -shards' single leader, which runs as the operator's ServiceAccount with
// a 2 GiB limit.
func heapPlot(r *benchfig.Results) (*plot.Plot, error) {
	p := newPlot("Manager heap in use after GC", "Drinks (log scale)", "MiB (log scale)")
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, logLabels{}
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, logLabels{}
	var medians plotter.XYs
	var spread plotter.YErrors
	for _, n := range plotRunSizes {
		recs, _, err := r.RunsAt(n)
		if err != nil {
			return nil, err
		}
		xs := make([]float64, len(recs))
		for i, rec := range recs {
			xs[i] = rec.MemoryN.HeapInuse / (1 << 20)
		}
		s := bench.SpreadOf(xs)
		medians = append(medians, plotter.XY{X: float64(n), Y: s.Median})
		spread = append(spread, struct{ Low, High float64 }{s.Median - s.Min, s.Max - s.Median})
	}
	if err := addLine(p, 0, "make bench-full: median of the newest runs", medians); err != nil {
		return nil, err
	}
	bars, err := plotter.NewYErrorBars(struct {
		plotter.XYer
		plotter.YErrorer
	}{medians, spread})
	if err != nil {
		return nil, err
	}
	bars.Color = palette[0]
	p.Add(bars)
	var leader plotter.XYs
	for _, n := range plotShardSizes {
		s, _, err := r.Shard(fmt.Sprintf("n%dr1", n))
		if err != nil {
			return nil, err
		}
		leader = append(leader, plotter.XY{X: float64(n), Y: s.HeapInuse[0] / (1 << 20)})
	}
	if err := addLine(p, 1, "bin/bench -shards: one replica, newest run", leader); err != nil {
		return nil, err
	}
	p.Legend.Top, p.Legend.Left = true, true
	return p, nil
}

// convergencePlot: the seconds from the first create until every Drink
// was Ready, against the replicas sharing them, for the newest -shards
// invocation at each size (the feature gate on, the fence called).
func convergencePlot(r *benchfig.Results) (*plot.Plot, error) {
	p := newPlot("Convergence against replicas (2 shared cores)", "replicas", "seconds")
	p.X.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 1, Label: "1"}, {Value: 2, Label: "2"}, {Value: 4, Label: "4"}})
	for i, n := range plotShardSizes {
		runs, err := newestShardSet(r, n)
		if err != nil {
			return nil, err
		}
		var xys plotter.XYs
		for _, s := range runs {
			xys = append(xys, plotter.XY{X: float64(s.Replicas), Y: s.Seconds})
		}
		label := fmt.Sprintf("%s Drinks (%s)", benchfig.Auto(float64(n)), benchfig.Short(runs[0].Commit))
		if err := addLine(p, i, label, xys); err != nil {
			return nil, err
		}
	}
	// Room above the lines for the legend.
	p.Legend.Top, p.Legend.Left = true, true
	p.Y.Min, p.Y.Max = 0, p.Y.Max*1.3
	return p, nil
}

// newestShardSet are the runs of the newest -shards invocation at n with
// the gate on, the fence called and the webhooks through the Service,
// fewest replicas first.
func newestShardSet(r *benchfig.Results, n int) ([]bench.ShardRecord, error) {
	var newest bench.ShardRecord
	for _, s := range r.Shards {
		if s.N == n && s.Date > newest.Date {
			newest = s
		}
	}
	if newest.Date == "" {
		return nil, fmt.Errorf("no -shards run at N = %d", n)
	}
	var set []bench.ShardRecord
	for _, s := range r.Shards {
		if s.N == n && s.Commit == newest.Commit && s.Command == newest.Command && s.FeatureGate && !s.FenceIdle && !s.DirectWebhooks {
			set = append(set, s)
		}
	}
	slices.SortStableFunc(set, func(a, b bench.ShardRecord) int { return a.Replicas - b.Replicas })
	return set, nil
}

// takeoverPlot: every probe Drink of the newest -shard-kill run at n, its
// latency (create to Ready) against when it was created, from the kill,
// by which replica's buckets it fell in.
func takeoverPlot(r *benchfig.Results, n int) (*plot.Plot, error) {
	k, src, err := r.Kill(n, "")
	if err != nil {
		return nil, err
	}
	if len(k.Probes) == 0 {
		return nil, fmt.Errorf("the newest run (%s) recorded no probes", src)
	}
	title := fmt.Sprintf("Probe latency: 1 of %d replicas killed, %s Drinks", k.Replicas, benchfig.Auto(float64(n)))
	p := newPlot(title, "probe created, seconds from the SIGKILL", "seconds to Ready (log scale)")
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, logLabels{}
	for i, rng := range []struct{ name, label string }{
		{"before", "before the kill"},
		{"kept", "buckets a survivor kept"},
		{"moved", "buckets moved between survivors"},
		{"killed", "the killed replica's buckets"},
	} {
		var xys plotter.XYs
		for _, s := range k.Probes {
			if s.Range == rng.name {
				xys = append(xys, plotter.XY{X: s.At, Y: max(s.Seconds, 0.001)})
			}
		}
		if len(xys) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, err
		}
		sc.Color = palette[i]
		sc.Radius = vg.Points(1.5)
		sc.Shape = draw.CircleGlyph{}
		p.Add(sc)
		p.Legend.Add(fmt.Sprintf("%s (%d)", rng.label, len(xys)), sc)
	}
	// Room below the fastest probes for the legend, whose text starts at
	// the left: a viewer without the font the widths were measured in
	// draws it wider, which then runs into the plot rather than off it.
	p.Y.Min /= 20
	p.Legend.Left = true
	return p, nil
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	p.Add(plotter.NewGrid())
	return p
}

func addLine(p *plot.Plot, i int, label string, xys plotter.XYs) error {
	l, s, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	l.Color, s.Color = palette[i], palette[i]
	s.Shape = draw.CircleGlyph{}
	p.Add(l, s)
	p.Legend.Add(label, l, s)
	return nil
}

// logLabels labels a log axis at 1, 2 and 5 times each power of ten,
// written as the documents write numbers (1,000, not 1e+03).
type logLabels struct{}

func (logLabels) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for _, t := range (plot.LogTicks{Prec: -1}).Ticks(lo, hi) {
		if t.Label != "" {
			v, err := strconv.ParseFloat(t.Label, 64)
			if err == nil {
				t.Label = benchfig.Auto(v)
			}
		}
		if t.Label == "" {
			if m := t.Value / math.Pow10(int(math.Floor(math.Log10(t.Value)+1e-9))); math.Abs(m-2) < 1e-9 || math.Abs(m-5) < 1e-9 {
				t.Label = benchfig.Auto(t.Value)
			}
		}
		ticks = append(ticks, t)
	}
	return ticks
}

package main

import (
	"fmt"
	"math"
	"strconv"

	"github.com/jakiro-kv/jakiro/client"
)

// The loadgen experiments: each point is one runLoad against a server
// process started per experiment and preloaded with 16 B keys.

var allModes = []client.Mode{client.ModeRFP, client.ModeReply, client.ModeHybrid}

// loadCols are the CSV columns every loadgen row ends with.
// loadavg1 is the machine's 1-minute load average after the point: other
// work on a 2-core box skews busy-polling results badly.
// client_us_per_op is the load generator's CPU per operation (this
// process, getrusage).
var loadCols = []string{"mops", "p50_us", "p99_us", "round_trips_per_op", "retries_per_op", "extra_reads_per_op", "replied_frac", "rfs_end", "misses", "client_us_per_op", "loadavg1"}

func loadVals(r loadResult) []any {
	ops := float64(max(r.Counters.Ops, 1))
	return []any{r.Mops, r.P(50), r.P(99), r.RoundTrips(), r.Retries(), float64(r.Counters.ExtraReads) / ops,
		float64(r.Counters.Replied) / ops, r.RFS, r.Misses, r.CPUPerOp(), loadAvg()}
}

func rfsName(n int) string {
	if n == 0 {
		return "auto"
	}
	return strconv.Itoa(n)
}

// point runs one spec, logs it and returns the result.
func (e *env) point(label string, s loadSpec, ks *keySet) (loadResult, error) {
	if s.Warmup == 0 {
		s.Warmup = e.Warmup
	}
	if s.Duration == 0 {
		s.Duration = e.Duration
	}
	s.Keys = len(ks.keys)
	r, err := runLoad(e.Ctx, s, ks)
	if err != nil {
		return r, fmt.Errorf("%s: %w", label, err)
	}
	e.logf("  %-40s %7.3f Mops  p50 %7.2f µs  p99 %8.2f µs  %.2f trips/op  %.2f retries/op  client %.2f µs/op", label, r.Mops, r.P(50), r.P(99), r.RoundTrips(), r.Retries(), r.CPUPerOp())
	return r, nil
}

// repCols head the loadCols of a point measured e.reps() times: its
// throughput's min and max (loadCols' mops is the median, and the other
// columns are those of the median repetition).
var repCols = []string{"reps", "mops_min", "mops_max"}

// medianRun picks the repetition with the median throughput and returns it
// with the spread of all of them.
func medianRun(rs []loadResult) (loadResult, spread) {
	ms := make([]float64, len(rs))
	for i, r := range rs {
		ms[i] = r.Mops
	}
	sp := spreadOf(ms)
	best := rs[0]
	for _, r := range rs {
		if math.Abs(r.Mops-sp.Med) < math.Abs(best.Mops-sp.Med) {
			best = r
		}
	}
	return best, sp
}

func repVals(sp spread) []any { return []any{sp.N, sp.Min, sp.Max} }

// runClients: throughput vs number of client connections (Fig. 4), up to
// 1,024. Each client keeps one request outstanding (window 1), like the
// paper's client threads; all clients share the load generator's cores.
func runClients(e *env) error {
	counts := []int{1, 2, 4, 8, 16, 64, 256, 1024}
	if e.Quick {
		counts = []int{1, 2}
	}
	ks := newKeySet(e.Keys, sizeDist{Fixed: 32})
	t := &table{Name: "clients", Cols: append(append([]string{"mode", "clients", "window"}, repCols...), loadCols...),
		Settings: e.settings(serverOpts{}, "workload: 95% GET, uniform, 32 B values, RFS auto; window 1 per client",
			fmt.Sprintf("each point: median of %d interleaved repetitions (min, max beside)", e.reps()))}
	runs := map[client.Mode]map[int][]loadResult{}
	err := e.server(serverOpts{}, ks, func(addr string) error {
		for rep := 0; rep < e.reps(); rep++ {
			for _, m := range allModes {
				if runs[m] == nil {
					runs[m] = map[int][]loadResult{}
				}
				for _, n := range counts {
					r, err := e.point(fmt.Sprintf("%s clients=%d rep %d", m, n, rep+1), loadSpec{Addr: addr, Mode: m, Clients: n, Window: 1, GetRatio: 0.95}, ks)
					if err != nil {
						return err
					}
					runs[m][n] = append(runs[m][n], r)
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	var ss []series
	for _, m := range allModes {
		s := series{Name: m.String()}
		for _, n := range counts {
			r, sp := medianRun(runs[m][n])
			t.add(append(append([]any{m, n, 1}, repVals(sp)...), loadVals(r)...)...)
			s.addSpread(float64(n), sp)
		}
		ss = append(ss, s)
	}
	png := e.png("clients")
	if err := linePlot(png, "Throughput vs client connections, 32 B values, 95% GET (cf. Fig. 4)", "client connections", "Mops", ss, true); err != nil {
		return err
	}
	return e.done(t, png)
}

// runLatency: latency CDF at peak (closed loop) and at 50% of that
// throughput (paced; latency counted from each op's scheduled start).
func runLatency(e *env) error {
	const clients = 2
	ks := newKeySet(e.Keys, sizeDist{Fixed: 32})
	t := &table{Name: "latency", Cols: []string{"mode", "load", "mops", "percentile", "latency_us"},
		Settings: e.settings(serverOpts{}, fmt.Sprintf("workload: 95%% GET, uniform, 32 B values, RFS auto; %d clients, 1 request each outstanding", clients),
			"load=peak: closed loop; load=half: paced at 50% of that mode's peak, latency from scheduled start")}
	var ss []series
	quantiles := []float64{1, 5, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.99, 100}
	err := e.server(serverOpts{}, ks, func(addr string) error {
		for _, m := range allModes {
			spec := loadSpec{Addr: addr, Mode: m, Clients: clients, Window: 1, GetRatio: 0.95}
			peak, err := e.point(fmt.Sprintf("%s peak", m), spec, ks)
			if err != nil {
				return err
			}
			spec.Rate = peak.Mops * 1e6 / 2
			half, err := e.point(fmt.Sprintf("%s 50%% load (%.3f Mops)", m, spec.Rate/1e6), spec, ks)
			if err != nil {
				return err
			}
			for _, x := range []struct {
				name string
				r    loadResult
			}{{"peak", peak}, {"half", half}} {
				s := series{Name: fmt.Sprintf("%s %s", m, x.name)}
				for _, q := range quantiles {
					v := x.r.P(q)
					t.add(m, x.name, x.r.Mops, q, v)
				}
				// The CDF from the histogram's own buckets.
				for _, b := range x.r.Lat.CumulativeDistribution() {
					s.add(float64(b.ValueAt)/1e3, b.Quantile/100)
				}
				ss = append(ss, s)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	png := e.png("latency")
	if err := cdfPlot(png, "Latency CDF at peak and 50% load, 32 B, 95% GET (cf. Fig. 5)", "latency (µs)", ss, true); err != nil {
		return err
	}
	return e.done(t, png)
}

// ratioPoints measures modes x GET ratios with one pipelined client.
func (e *env) ratioSweep(name, title string, dists []float64, modes []client.Mode, ratios []float64) error {
	ks := newKeySet(e.Keys, sizeDist{Fixed: 32})
	t := &table{Name: name, Cols: append([]string{"mode", "dist", "get_pct", "window"}, loadCols...),
		Settings: e.settings(serverOpts{}, "workload: 32 B values, RFS auto; 1 client, window 8 (pipelined)", "dist: 0 = uniform, else zipfian constant")}
	var labels []string
	for _, d := range dists {
		for _, g := range ratios {
			l := fmt.Sprintf("%.0f%% GET", g*100)
			if len(dists) > 1 {
				l = distName(d) + " " + l
			}
			labels = append(labels, l)
		}
	}
	var ss []series
	err := e.server(serverOpts{}, ks, func(addr string) error {
		for _, m := range modes {
			s := series{Name: m.String()}
			for _, d := range dists {
				for _, g := range ratios {
					r, err := e.point(fmt.Sprintf("%s %s get=%.0f%%", m, distName(d), g*100),
						loadSpec{Addr: addr, Mode: m, Clients: 1, Window: 8, GetRatio: g, Zipf: d}, ks)
					if err != nil {
						return err
					}
					t.add(append([]any{m, d, g * 100, 8}, loadVals(r)...)...)
					s.add(g, r.Mops)
				}
			}
			ss = append(ss, s)
		}
		return nil
	})
	if err != nil {
		return err
	}
	png := e.png(name)
	if err := barPlot(png, title, "Mops", labels, ss); err != nil {
		return err
	}
	return e.done(t, png)
}

func distName(z float64) string {
	if z == 0 {
		return "uniform"
	}
	return fmt.Sprintf("zipf%.2f", z)
}

func runGetRatio(e *env) error {
	return e.ratioSweep("getratio", "Throughput by GET ratio, 32 B, uniform (cf. Fig. 6)", []float64{0}, allModes, []float64{0.05, 0.5, 0.95, 1})
}

func runSkew(e *env) error {
	return e.ratioSweep("skew", "Uniform vs zipf .99 keys by GET ratio, 32 B (cf. Fig. 9)", []float64{0, 0.99},
		[]client.Mode{client.ModeRFP, client.ModeReply}, []float64{0.05, 0.5, 0.95})
}

// sizeSweep measures configs x value sizes, re-preloading for each size.
type sizeCfg struct {
	name string
	mode client.Mode
	rfs  int
}

func (e *env) sizeSweep(name, title string, cfgs []sizeCfg, sizes []int) error {
	t := &table{Name: name, Cols: append([]string{"config", "mode", "rfs", "value_size"}, loadCols...),
		Settings: e.settings(serverOpts{}, "workload: 95% GET, uniform; 1 client, window 8 (pipelined); values rewritten at each size")}
	ss := make([]series, len(cfgs))
	for i, c := range cfgs {
		ss[i].Name = c.name
	}
	err := e.server(serverOpts{}, nil, func(addr string) error {
		for _, size := range sizes {
			ks := newKeySet(e.Keys, sizeDist{Fixed: size})
			if err := preload(e.Ctx, addr, ks); err != nil {
				return err
			}
			for i, c := range cfgs {
				r, err := e.point(fmt.Sprintf("%s size=%d", c.name, size),
					loadSpec{Addr: addr, Mode: c.mode, RFS: c.rfs, Clients: 1, Window: 8, GetRatio: 0.95}, ks)
				if err != nil {
					return err
				}
				t.add(append([]any{c.name, c.mode, rfsName(c.rfs), size}, loadVals(r)...)...)
				ss[i].add(float64(size), r.Mops)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	png := e.png(name)
	if err := linePlot(png, title, "value size (bytes)", "Mops", ss, true); err != nil {
		return err
	}
	return e.done(t, png)
}

func runValueSize(e *env) error {
	sizes := []int{32, 64, 128, 256, 512, 1024}
	if e.Quick {
		sizes = []int{32, 128}
	}
	paper := client.RFSFor(32)
	return e.sizeSweep("valuesize", "Throughput by value size, 95% GET (cf. Fig. 7)", []sizeCfg{
		{fmt.Sprintf("rfp rfs=%d (paper)", paper), client.ModeRFP, paper},
		{"rfp rfs=auto", client.ModeRFP, 0},
		{"reply", client.ModeReply, 0},
		{"hybrid", client.ModeHybrid, 0},
	}, sizes)
}

func runRFS(e *env) error {
	sizes := []int{32, 64, 128, 256, 512}
	if e.Quick {
		sizes = []int{32, 128}
	}
	var cfgs []sizeCfg
	for _, v := range []int{32, 128, 512} {
		n := client.RFSFor(v)
		cfgs = append(cfgs, sizeCfg{fmt.Sprintf("rfs=%d (fits %d B)", n, v), client.ModeRFP, n})
	}
	cfgs = append(cfgs, sizeCfg{"rfs=auto", client.ModeRFP, 0})
	return e.sizeSweep("rfs", "RFP throughput by remote fetch size (cf. Fig. 8)", cfgs, sizes)
}

// runMixed: Weibo-like value sizes; round trips per op show what RFS costs.
func runMixed(e *env) error {
	ks := newKeySet(e.Keys, sizeDist{Mixed: true})
	cfgs := []sizeCfg{
		{"rfp rfs=auto", client.ModeRFP, 0},
		{fmt.Sprintf("rfp rfs=%d", client.RFSFor(32)), client.ModeRFP, client.RFSFor(32)},
		{fmt.Sprintf("rfp rfs=%d (paper)", client.RFSFor(512)), client.ModeRFP, client.RFSFor(512)},
		{"reply", client.ModeReply, 0},
		{"hybrid", client.ModeHybrid, 0},
	}
	ratios := []float64{0.05, 0.5, 0.95}
	t := &table{Name: "mixed", Cols: append([]string{"config", "mode", "rfs", "get_pct"}, loadCols...),
		Settings: e.settings(serverOpts{}, fmt.Sprintf("workload: Weibo-like sizes 1-899 B (lognormal, %s), uniform keys; 1 client, window 8", fmtMean(ks)))}
	var labels []string
	for _, g := range ratios {
		labels = append(labels, fmt.Sprintf("%.0f%% GET", g*100))
	}
	ss := make([]series, len(cfgs))
	trips := make([]series, len(cfgs))
	err := e.server(serverOpts{}, ks, func(addr string) error {
		for i, c := range cfgs {
			ss[i].Name = c.name
			trips[i].Name = c.name
			for _, g := range ratios {
				r, err := e.point(fmt.Sprintf("%s get=%.0f%%", c.name, g*100),
					loadSpec{Addr: addr, Mode: c.mode, RFS: c.rfs, Clients: 1, Window: 8, GetRatio: g}, ks)
				if err != nil {
					return err
				}
				t.add(append([]any{c.name, c.mode, rfsName(c.rfs), g * 100}, loadVals(r)...)...)
				ss[i].add(g, r.Mops)
				trips[i].add(g, r.RoundTrips())
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	png := e.png("mixed")
	if err := barPlot(png, "Weibo-like sizes (1-899 B, mean ~43 B): throughput (cf. Fig. 10)", "Mops", labels, ss); err != nil {
		return err
	}
	png2 := e.png("mixed-trips")
	if err := barPlot(png2, "Weibo-like sizes: fabric round trips per op", "round trips / op", labels, trips); err != nil {
		return err
	}
	return e.done(t, png, png2)
}

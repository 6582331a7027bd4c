package main

import (
	"fmt"
	"runtime"

	"github.com/magiconair/properties"

	"github.com/jakiro-kv/jakiro/ycsb"
)

// runYCSBThreads: go-ycsb read-only (uniform keys) at 8 to 1,024 threads
// against one Jakiro server at its defaults: throughput should hold as
// threads grow. Beside each point, the load generator's own ceiling at
// that thread count (yieldDB: one thread switch per operation, no
// database), which bounds how well any database can hold. The thread
// counts and the two databases interleave within each repetition.
func runYCSBThreads(e *env) error {
	def := []int{8, 64, 256, 1024}
	if e.Quick {
		def = []int{8, 64}
	}
	threads := e.pickThreads(def)
	runDur := 2 * e.Duration
	base, source := paperProps("paper-uniform")
	records := min(e.Keys, int(base.GetInt64("recordcount", 100000)))
	o := serverOpts{Defaults: true}
	srv, err := startServer(o)
	if err != nil {
		return err
	}
	defer srv.Stop()
	p := properties.NewProperties()
	p.Merge(base)
	p.Set("recordcount", fmt.Sprint(records))
	p.Set(ycsb.PropAddr, srv.Addr)
	p.Set("threadcount", "4")
	if lr, err := ycsb.Run(e.Ctx, ycsb.RunConfig{DB: "jakiro", Props: p, Load: true}); err != nil || lr.Errors > 0 {
		return fmt.Errorf("load: %v (%d errors)", err, lr.Errors)
	}
	p.Set("readproportion", "1")
	p.Set("updateproportion", "0")
	ops, gen := map[int][]float64{}, map[int][]float64{}
	last := map[int]*ycsb.Result{}
	for rep := 0; rep < e.reps(); rep++ {
		for _, th := range threads {
			p.Set("threadcount", fmt.Sprint(th))
			r, err := ycsb.Run(e.Ctx, ycsb.RunConfig{DB: "jakiro", Props: p, Duration: runDur})
			if err != nil {
				return fmt.Errorf("%d threads: %w", th, err)
			}
			ops[th] = append(ops[th], r.OpsPerSec())
			last[th] = r
			g, err := ycsb.Run(e.Ctx, ycsb.RunConfig{DB: yieldDBName, Props: p, Duration: runDur})
			if err != nil {
				return fmt.Errorf("%d threads, %s: %w", th, yieldDBName, err)
			}
			gen[th] = append(gen[th], g.OpsPerSec())
			e.logf("  rep %d %4d threads: %9.0f ops/s  p50 %7.2f µs  p99 %8.2f µs  errors %d  (%s %9.0f ops/s)", rep+1, th, r.OpsPerSec(),
				float64(r.Total.ValueAtQuantile(50))/1e3, float64(r.Total.ValueAtQuantile(99))/1e3, r.Errors, yieldDBName, g.OpsPerSec())
			if r.Errors > 0 {
				e.logf("    first error: %v", r.FirstError)
			}
		}
	}
	best, bestTh, genBest := 0.0, threads[0], 0.0
	for _, th := range threads {
		if m := spreadOf(ops[th]).Med; m > best {
			best, bestTh = m, th
		}
		genBest = max(genBest, spreadOf(gen[th]).Med)
	}
	// bound: Jakiro's ratio to its best if, from its best point on, only
	// the load generator's time per operation changed with the threads.
	// With more than one P a lone yielding goroutine is handed between
	// threads, so noop-yield's rate is no ceiling: no bound then.
	oneP := runtime.GOMAXPROCS(0) == 1
	bound := func(th int) string {
		if !oneP {
			return ""
		}
		perOp := 1 / best
		return fmt.Sprintf("%.2f", perOp/(perOp+1/spreadOf(gen[th]).Med-1/spreadOf(gen[bestTh]).Med))
	}
	t := &table{Name: "ycsbthreads", Cols: append(append(append(append([]string{"threads", "reps"}, spreadCols("ops_per_sec")...),
		"p50_us", "p99_us", "errors", "round_trips_per_op", "vs_best"), spreadCols("gen_ops_per_sec")...), "gen_vs_best", "vs_best_bound"),
		Settings: []string{e.idleSetting(), "server: " + o.withDefaults().String() + ", shm fabric",
			"workload: " + source + fmt.Sprintf(" (recordcount=%d) with readproportion=1, updateproportion=0: read-only, uniform", records),
			fmt.Sprintf("go-ycsb v1.0.1 in this process, jakiro driver defaults (jakiro.conns=auto: one client.Client shared by every thread), batch.size=1; run bounded to %v; each point the median of %d interleaved repetitions", runDur, e.reps()),
			"latency columns: the last repetition's",
			"gen_*: go-ycsb against " + yieldDBName + ", a database that only yields its thread once per operation: the load generator's own ceiling at that thread count (gen_vs_best: its ratio to its own best)",
			"vs_best_bound: the ratio to the best Jakiro would reach at that thread count if, from its best point, only the load generator's time per operation (1/gen_ops_per_sec) changed; empty unless GOMAXPROCS is 1 (with more Ps a yielding goroutine is handed between threads and noop-yield is no ceiling)"}}
	s := series{Name: "jakiro (defaults)"}
	g := series{Name: yieldDBName + " / 4 (load generator ceiling)"}
	for _, th := range threads {
		sp, gs := spreadOf(ops[th]), spreadOf(gen[th])
		r := last[th]
		t.add(append(append(append(append([]any{th, sp.N}, sp.vals()...), float64(r.Total.ValueAtQuantile(50))/1e3, float64(r.Total.ValueAtQuantile(99))/1e3,
			r.Errors, fmt.Sprintf("%.3f", r.Counters.FabricOpsPerOp()), fmt.Sprintf("%.2f", sp.Med/best)), gs.vals()...),
			fmt.Sprintf("%.2f", gs.Med/genBest), bound(th))...)
		s.addSpread(float64(th), spread{Med: sp.Med / 1e6, Min: sp.Min / 1e6, Max: sp.Max / 1e6, N: sp.N})
		g.addSpread(float64(th), spread{Med: gs.Med / 4e6, Min: gs.Min / 4e6, Max: gs.Max / 4e6, N: gs.N})
		b := bound(th)
		if b == "" {
			b = "none with GOMAXPROCS > 1"
		}
		e.logf("  %4d threads: %s ops/s, %.2f of the best (load generator alone: %.2f of its best; bound %s)", th, sp, sp.Med/best, gs.Med/genBest, b)
	}
	png := e.png("ycsbthreads")
	if err := linePlot(png, "go-ycsb read-only, uniform, Jakiro at defaults (median, min–max)", "go-ycsb threads", "Mops", []series{s, g}, true); err != nil {
		return err
	}
	return e.done(t, png)
}

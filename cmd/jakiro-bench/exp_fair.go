package main

import (
	"fmt"
	"time"

	"github.com/jakiro-kv/jakiro/client"
)

// runFairness: 8 clients with one request at a time (window 1) beside a
// flooding client (window 32, batches back to back, in its own process),
// against a partition at server defaults. Each repetition runs a
// baseline (the 9th client well-behaved: window 1) and the flood, both
// with the 8 in this process and the 9th in a child process. A fair
// share is a 9th of the server's throughput in the flood run (fair_t9),
// or, max-min fair, that capped at what a window-1 client got in the
// baseline (fair_maxmin): a window-1 client cannot use more than its
// round trips allow.
func runFairness(e *env) error {
	const polite = 8
	ks := newKeySet(e.Keys, sizeDist{Fixed: 32})
	o := serverOpts{Defaults: true}
	t := &table{Name: "fairness", Cols: []string{"rep", "run", "ninth_window", "ninth_mops", "polite_total_mops", "polite_min_mops", "polite_max_mops",
		"total_mops", "fair_t9_mops", "min_vs_fair_t9", "baseline_polite_median_mops", "fair_maxmin_mops", "min_vs_fair_maxmin"},
		Settings: e.settings(o, fmt.Sprintf("workload: 95%% GET, uniform, 32 B values; %d window-1 clients in this process (GOMAXPROCS %d) and a 9th client in a child process (GOMAXPROCS 1): window 1 (baseline) or 32 (flood, batches back to back)", polite, e.M.clientProcs()),
			"fair_t9: a 9th of the flood run's total; fair_maxmin: fair_t9 capped at the baseline's median window-1 client rate",
			fmt.Sprintf("%d repetitions, baseline and flood interleaved", e.reps()))}
	var worst []float64
	err := e.server(o, ks, func(addr string) error {
		for rep := 0; rep < e.reps(); rep++ {
			var basePolite float64
			for _, ninth := range []int{1, 32} {
				run := "baseline"
				if ninth > 1 {
					run = "flood"
				}
				spec := loadSpec{Addr: addr, Mode: client.ModeRFP, Clients: 1, Window: ninth, GetRatio: 0.95, Sizes: sizeDist{Fixed: 32},
					Warmup: e.Warmup + 500*time.Millisecond, Duration: e.Duration + time.Second}
				child, err := startLoad(spec, len(ks.keys), 1)
				if err != nil {
					return err
				}
				r, err := e.point(fmt.Sprintf("%s: %d window-1 clients, rep %d", run, polite, rep+1),
					loadSpec{Addr: addr, Mode: client.ModeRFP, Clients: polite, Window: 1, GetRatio: 0.95}, ks)
				cr, cerr := child.wait(time.Minute)
				if err != nil {
					return err
				}
				if cerr != nil {
					return cerr
				}
				ps := spreadOf(r.PerMops)
				total := r.Mops + cr.Mops
				t9 := total / 9
				if ninth == 1 {
					basePolite = ps.Med
				}
				maxmin := min(t9, basePolite)
				t.add(rep+1, run, ninth, cr.Mops, r.Mops, ps.Min, ps.Max, total, t9, ps.Min/t9, basePolite, maxmin, ps.Min/maxmin)
				e.logf("  %s rep %d: 9th client (window %d) %.3f Mops; window-1 clients %.4f–%.4f Mops each; worst/fair(T/9) %.2f, worst/fair(max-min) %.2f",
					run, rep+1, ninth, cr.Mops, ps.Min, ps.Max, ps.Min/t9, ps.Min/maxmin)
				if ninth > 1 {
					worst = append(worst, ps.Min/maxmin)
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	e.logf("  worst window-1 client beside the flood, of its max-min fair share: %s", spreadOf(worst))
	return e.done(t)
}

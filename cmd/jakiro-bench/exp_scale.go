package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A shaped point runs its load in child processes, so each load process
// has its own scheduler and GOMAXPROCS, and its CPU time is its own:
// Procs processes at GOMAXPROCS MaxProcs each run spec (Clients callers,
// each with a connection of its own or, with spec.Shared, one Client for
// all of them).
type shape struct {
	Procs, MaxProcs int
	Spec            loadSpec
}

// shapeResult is a shaped point's measurement, summed over its processes.
type shapeResult struct {
	Mops         float64
	ClientUSOp   float64  // load processes' CPU µs per operation
	ServerUSOp   float64  // the server process's CPU µs per operation
	P50US, P99US float64  // of the first process
	Sched        schedLat // of the first process
	// The first process's client counters per operation.
	FabricOps, Retries, Rings float64
}

// runShape measures sh against the server at addr (process serverPid; 0:
// no server CPU).
func (e *env) runShape(sh shape, keys, serverPid int) (shapeResult, error) {
	spec := sh.Spec
	// Children take a while to start and dial: their warmup covers it.
	spec.Warmup = e.Warmup + 300*time.Millisecond + time.Duration(spec.Clients*sh.Procs)*200*time.Microsecond
	spec.Duration = e.Duration
	if spec.Shared {
		spec.Warmup = e.Warmup + 300*time.Millisecond
	}
	procs := make([]*loadProc, 0, sh.Procs)
	defer func() {
		for _, p := range procs {
			p.cmd.Process.Kill()
		}
	}()
	t0 := time.Now()
	for range sh.Procs {
		p, err := startLoad(spec, keys, sh.MaxProcs)
		if err != nil {
			return shapeResult{}, err
		}
		procs = append(procs, p)
	}
	// Server CPU over the middle of the measured window.
	var srvCPU time.Duration
	var srvWin time.Duration
	if serverPid > 0 {
		time.Sleep(time.Until(t0.Add(spec.Warmup + 100*time.Millisecond)))
		c0, w0 := procCPU(serverPid), time.Now()
		time.Sleep(time.Until(t0.Add(spec.Warmup + spec.Duration - 100*time.Millisecond)))
		srvCPU, srvWin = procCPU(serverPid)-c0, time.Since(w0)
	}
	var res shapeResult
	var ops, cpu int64
	for i, p := range procs {
		r, err := p.wait(spec.Warmup + spec.Duration + time.Minute)
		if err != nil {
			return res, err
		}
		res.Mops += r.Mops
		ops += r.Ops
		cpu += r.CPUNS
		if i == 0 {
			res.P50US, res.P99US, res.Sched = r.P50US, r.P99US, r.Sched
			res.FabricOps, res.Retries, res.Rings = r.FabricOps, r.Retries, r.Rings
		}
	}
	procs = procs[:0]
	if ops > 0 {
		res.ClientUSOp = float64(cpu) / 1e3 / float64(ops)
	}
	if srvWin > 0 && res.Mops > 0 {
		res.ServerUSOp = srvCPU.Seconds() * 1e6 / (res.Mops * 1e6 * srvWin.Seconds())
	}
	return res, nil
}

// shapeRuns collects a shaped point's repetitions.
type shapeRuns []shapeResult

func (rs shapeRuns) med(f func(shapeResult) float64) spread {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = f(r)
	}
	return spreadOf(xs)
}

// schedCols explains the scheduling columns of shapeCols.
const schedCols = "sched_p999_us, sched_over_1ms_pct: the load process's goroutines' run-queue waits while measuring (Go's /sched/latencies histogram, first process): the 99.9th percentile, and the share of waits of a millisecond or more (a scheduler slice: runnable on a P whose thread the kernel descheduled)"

var shapeCols = []string{"reps", "mops", "mops_min", "mops_max", "client_us_per_op", "server_us_per_op", "p50_us", "p99_us", "sched_p999_us", "sched_over_1ms_pct"}

func (rs shapeRuns) vals() []any {
	m := rs.med(func(r shapeResult) float64 { return r.Mops })
	return []any{m.N, m.Med, m.Min, m.Max,
		rs.med(func(r shapeResult) float64 { return r.ClientUSOp }).Med,
		rs.med(func(r shapeResult) float64 { return r.ServerUSOp }).Med,
		rs.med(func(r shapeResult) float64 { return r.P50US }).Med,
		rs.med(func(r shapeResult) float64 { return r.P99US }).Med,
		rs.med(func(r shapeResult) float64 { return r.Sched.P999US }).Med,
		rs.med(func(r shapeResult) float64 { return r.Sched.Over1msPct }).Med}
}

// runCallers: one process with many goroutines calling Get, as a real
// service is, at GOMAXPROCS 1 and 2: 64 and 1,024 callers on connections
// of their own and sharing one Client, beside one goroutine running
// batches of 8. Reports throughput and the client's and server's CPU per
// operation, and the ratios the SDK's execution model is judged by.
func runCallers(e *env) error {
	type point struct {
		name         string
		callers, win int
		shared       bool
	}
	points := []point{{"batch8", 1, 8, false}, {"own", 64, 1, false}, {"shared", 64, 1, true},
		{"own", 1024, 1, false}, {"shared", 1024, 1, true}}
	gmps := []int{1, 2}
	if e.Quick {
		points, gmps = points[:3], []int{1}
	}
	ks := newKeySet(e.Keys, sizeDist{Fixed: 32})
	o := serverOpts{MaxClients: 4096}
	t := &table{Name: "callers", Cols: append(append([]string{"shape", "callers", "window", "gomaxprocs"}, shapeCols...),
		"vs_gomaxprocs1", "client_cpu_vs_batch8", "vs_64_callers"),
		Settings: e.settings(o, "workload: 100% GET, uniform, 32 B values, client mode "+e.ClientMode.String()+"; one load process at GOMAXPROCS 1 or 2",
			"shape: batch8 = one goroutine running batches of 8; own = each caller its own client.Client (connection); shared = every caller one client.Client",
			"client_us_per_op: the load process's CPU (getrusage) over the measured time per operation; server_us_per_op: the server process's (/proc/PID/stat); a process that spins at 100% of a core shows 1/throughput there",
			fmt.Sprintf("latency: every operation timed up to %d callers, one in %d above (their histograms would cost the load generator its cache; batches are timed once each)", sampleAbove, latencySample),
			schedCols,
			fmt.Sprintf("each point: median of %d interleaved repetitions", e.reps()))}
	runs := map[string]shapeRuns{}
	key := func(p point, g int) string { return fmt.Sprintf("%s/%d/%d/%d", p.name, p.callers, p.win, g) }
	err := e.serverProc(o, ks, func(addr string, pid int) error {
		for rep := 0; rep < e.reps(); rep++ {
			for _, g := range gmps {
				for _, p := range points {
					sh := shape{Procs: 1, MaxProcs: g, Spec: loadSpec{Addr: addr, Mode: e.ClientMode, Clients: p.callers, Window: p.win,
						GetRatio: 1, Sizes: sizeDist{Fixed: 32}, Shared: p.shared}}
					r, err := e.runShape(sh, len(ks.keys), pid)
					if err != nil {
						return fmt.Errorf("%s: %w", key(p, g), err)
					}
					e.logf("  %-8s callers=%-5d window=%d GOMAXPROCS=%d rep %d: %.3f Mops  client %.3f µs/op  server %.3f µs/op  p50 %.1f µs  run-queue waits: p99.9 %.0f µs, %.2f%% >= 1 ms",
						p.name, p.callers, p.win, g, rep+1, r.Mops, r.ClientUSOp, r.ServerUSOp, r.P50US, r.Sched.P999US, r.Sched.Over1msPct)
					runs[key(p, g)] = append(runs[key(p, g)], r)
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	mops := func(k string) float64 { return runs[k].med(func(r shapeResult) float64 { return r.Mops }).Med }
	cpu := func(k string) float64 { return runs[k].med(func(r shapeResult) float64 { return r.ClientUSOp }).Med }
	var ss []series
	for _, g := range gmps {
		s := series{Name: fmt.Sprintf("GOMAXPROCS %d", g)}
		for i, p := range points {
			k := key(p, g)
			vs1, vsB, vs64 := "", "", ""
			if g != gmps[0] {
				vs1 = strconv.FormatFloat(mops(k)/mops(key(p, gmps[0])), 'f', 3, 64)
			}
			if p.name != "batch8" {
				vsB = strconv.FormatFloat(cpu(k)/cpu(key(points[0], g)), 'f', 3, 64)
			}
			if p.callers > 64 {
				vs64 = strconv.FormatFloat(mops(k)/mops(key(point{p.name, 64, p.win, p.shared}, g)), 'f', 3, 64)
			}
			t.add(append(append([]any{p.name, p.callers, p.win, g}, runs[k].vals()...), vs1, vsB, vs64)...)
			s.addSpread(float64(i), runs[k].med(func(r shapeResult) float64 { return r.Mops }))
		}
		ss = append(ss, s)
	}
	labels := make([]string, len(points))
	for i, p := range points {
		labels[i] = fmt.Sprintf("%s %dx%d", p.name, p.callers, p.win)
	}
	png := e.png("callers")
	if err := barPlot(png, "One load process: Get callers, own connections vs one shared Client", "Mops", labels, ss); err != nil {
		return err
	}
	return e.done(t, png)
}

// runScale: the paper's shape on one host. For each server partition
// count, N load processes (GOMAXPROCS 1) x C connections x window W, and
// the same callers from one process at GOMAXPROCS N, on connections of
// their own and sharing one Client.
func runScale(e *env) error {
	parts := e.ScaleParts
	if len(parts) == 0 {
		parts = []int{max(1, min(8, e.M.Cores/2))}
	}
	n := e.ScaleProcs
	if n <= 0 {
		n = max(1, min(8, e.M.Cores/2))
	}
	loads := e.ScaleLoads
	if len(loads) == 0 {
		loads = [][2]int{{8, 1}, {1, 8}}
	}
	ks := newKeySet(e.Keys, sizeDist{Fixed: 32})
	t := &table{Name: "scale", Cols: append([]string{"partitions", "shape", "processes", "gomaxprocs", "callers_per_process", "window"}, shapeCols...),
		Settings: e.settings(serverOpts{}, "server partitions: as in each row (server GOMAXPROCS partitions+1); the server line above is for 1",
			"workload: 95% GET, uniform, 32 B values, client mode "+e.ClientMode.String()+"; shm",
			fmt.Sprintf("procs: %d load processes at GOMAXPROCS 1, each with C callers on connections of their own; one: the same %d x C callers in one process at GOMAXPROCS %d, own connections; one-shared: the same, one client.Client", n, n, n),
			"client_us_per_op: every load process's CPU per operation; server_us_per_op: the server's",
			schedCols,
			fmt.Sprintf("each point: median of %d interleaved repetitions", e.reps()))}
	var ss []series
	for _, pc := range parts {
		o := serverOpts{Partitions: pc, MaxClients: 8192}
		type row struct {
			name                   string
			procs, gmp, callers, c int // c: callers per load process of the procs shape
			win                    int
			shared                 bool
		}
		var rows []row
		for _, l := range loads {
			rows = append(rows, row{"procs", n, 1, l[0], l[0], l[1], false}, row{"one", 1, n, n * l[0], l[0], l[1], false},
				row{"one-shared", 1, n, n * l[0], l[0], l[1], true})
		}
		runs := make([]shapeRuns, len(rows))
		err := e.serverProc(o, ks, func(addr string, pid int) error {
			for rep := 0; rep < e.reps(); rep++ {
				for i, r := range rows {
					sh := shape{Procs: r.procs, MaxProcs: r.gmp, Spec: loadSpec{Addr: addr, Mode: e.ClientMode, Clients: r.callers,
						Window: r.win, GetRatio: 0.95, Sizes: sizeDist{Fixed: 32}, Shared: r.shared}}
					res, err := e.runShape(sh, len(ks.keys), pid)
					if err != nil {
						return fmt.Errorf("partitions %d %s: %w", pc, r.name, err)
					}
					e.logf("  partitions=%d %-10s %dx%d callers x window %d: %.3f Mops  client %.3f µs/op  server %.3f µs/op  (first process: %.2f fabric ops, %.2f retries, %.3f rings per op)",
						pc, r.name, r.procs, r.callers, r.win, res.Mops, res.ClientUSOp, res.ServerUSOp, res.FabricOps, res.Retries, res.Rings)
					runs[i] = append(runs[i], res)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		for i, r := range rows {
			t.add(append([]any{pc, r.name, r.procs, r.gmp, r.callers, r.win}, runs[i].vals()...)...)
			name := fmt.Sprintf("%s C=%d W=%d", r.name, r.c, r.win)
			found := false
			for j := range ss {
				if ss[j].Name == name {
					ss[j].addSpread(float64(pc), runs[i].med(func(r shapeResult) float64 { return r.Mops }))
					found = true
				}
			}
			if !found {
				s := series{Name: name}
				s.addSpread(float64(pc), runs[i].med(func(r shapeResult) float64 { return r.Mops }))
				ss = append(ss, s)
			}
		}
	}
	png := e.png("scale")
	if err := linePlot(png, "Throughput by server partitions: load processes vs one process", "server partitions", "Mops", ss, false); err != nil {
		return err
	}
	return e.done(t, png)
}

// parseInts reads "1,2,4".
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad number %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseLoads reads "8x1,1x8": connections (callers) per process x window.
func parseLoads(s string) ([][2]int, error) {
	var out [][2]int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		c, w, ok := strings.Cut(f, "x")
		cn, err1 := strconv.Atoi(c)
		wn, err2 := strconv.Atoi(w)
		if !ok || err1 != nil || err2 != nil || cn < 1 || wn < 1 {
			return nil, fmt.Errorf("bad load %q (want CONNSxWINDOW, e.g. 8x1)", f)
		}
		out = append(out, [2]int{cn, wn})
	}
	return out, nil
}

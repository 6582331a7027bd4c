package main

import (
	"context"
	"fmt"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/fabric/fabricbench"
)

// onebyoneModes: every client mode, the default first.
var onebyoneModes = []client.Mode{client.ModeAuto, client.ModeRFP, client.ModeReply, client.ModeHybrid}

// onebyoneEcho names the echo floor's rows: it has no client mode.
const onebyoneEcho = "echo"

// defaultsServer is `jakiro server` with no flags: its partition count,
// the machine's GOMAXPROCS, 1 GiB and 64 KiB values.
var defaultsServer = serverOpts{Defaults: true, Memory: 1 << 30, MaxValue: 64 << 10}

// oneByOneSample is one point of one repetition.
type oneByOneSample struct {
	P50, P99  float64 // µs
	Ops       int64
	FabricOps float64 // the client's WRITEs + READs per GET (0 for the echo floor)
	Replied   float64 // share of GETs the server answered with a WRITE
}

// runOneByOne: one GET at a time (one client, one goroutine, GetTo of 32 B
// values, 16 B keys drawn uniformly from the preloaded set) against a
// `jakiro server` process at its defaults, on each fabric and in each
// client mode, beside the echo floor of that fabric (fabricbench's echo
// target: one 32 B request through a process that copies it back, READ
// again at once until there). Each repetition runs every point once, in
// turn, so a drift of the shared machine hits all of them.
func runOneByOne(e *env) error {
	if e.Addr != "" {
		return fmt.Errorf("onebyone starts its own servers and echo targets: --addr is not used")
	}
	fabrics := e.fabricsOr("shm", "tcp")
	ks := newKeySet(e.Keys, sizeDist{Fixed: 32})
	type target struct {
		fab  string
		addr string // the server
		echo string // the echo target
	}
	var targets []target
	var stops []func() // servers, echo targets, their directories
	defer func() {
		for _, s := range stops {
			s()
		}
	}()
	for _, fab := range fabrics {
		o := defaultsServer
		if fab == "tcp" {
			o.Listen = loopbackTCP
		}
		p, err := startServer(o)
		if err != nil {
			return fmt.Errorf("%s server: %w", fab, err)
		}
		stops = append(stops, p.Stop)
		t := time.Now()
		if err := preload(e.Ctx, p.Addr, ks); err != nil {
			return fmt.Errorf("%s preload: %w", fab, err)
		}
		e.logf("  %s: server %s, preloaded %d items (32 B values) in %v", fab, p.Addr, len(ks.keys), time.Since(t).Round(time.Millisecond))
		addr, cleanup, err := fabricAddr(fab)
		if err != nil {
			return err
		}
		stops = append(stops, cleanup)
		echo, err := fabricbench.StartEcho(addr)
		if err != nil {
			return fmt.Errorf("%s echo target: %w", fab, err)
		}
		stops = append(stops, func() { echo.Stop() })
		targets = append(targets, target{fab, p.Addr, addr})
	}
	samples := map[[2]string][]oneByOneSample{}
	for rep := 0; rep < e.reps(); rep++ {
		for _, t := range targets {
			s, err := e.echoPoint(t.echo)
			if err != nil {
				return fmt.Errorf("%s echo: %w", t.fab, err)
			}
			e.logf("  rep %d/%d %s echo: p50 %.3f µs p99 %.3f µs (%d round trips)", rep+1, e.reps(), t.fab, s.P50, s.P99, s.Ops)
			k := [2]string{t.fab, onebyoneEcho}
			samples[k] = append(samples[k], s)
			for _, m := range onebyoneModes {
				s, err := e.getPoint(t.addr, m, ks)
				if err != nil {
					return fmt.Errorf("%s %s: %w", t.fab, m, err)
				}
				e.logf("  rep %d/%d %s %s: p50 %.3f µs p99 %.3f µs (%d GETs, %.2f fabric ops/GET, %.0f%% replied)",
					rep+1, e.reps(), t.fab, m, s.P50, s.P99, s.Ops, s.FabricOps, 100*s.Replied)
				k := [2]string{t.fab, m.String()}
				samples[k] = append(samples[k], s)
			}
		}
	}
	t := oneByOneTable(e, fabrics, samples)
	png := e.png("onebyone")
	if err := oneByOnePlot(png, fabrics, samples); err != nil {
		return err
	}
	for _, r := range t.Rows {
		e.logf("  %s %-6s p50 %s µs p99 %s µs  p50 / echo p50 %s", r[0], r[1], r[3], r[6], r[len(r)-1])
	}
	return e.done(t, png)
}

// oneByOneSystems are the rows of one fabric, the echo floor first.
func oneByOneSystems() []string {
	s := []string{onebyoneEcho}
	for _, m := range onebyoneModes {
		s = append(s, m.String())
	}
	return s
}

// oneByOneTable: per fabric and system, the medians of the repetitions'
// p50 and p99 with their min and max, and p50 over the echo floor's p50
// (both medians) on the same fabric.
func oneByOneTable(e *env, fabrics []string, samples map[[2]string][]oneByOneSample) *table {
	t := &table{Name: "onebyone", Cols: append(append(append([]string{"fabric", "system", "reps"}, spreadCols("p50_us")...), spreadCols("p99_us")...),
		"gets_per_rep", "fabric_ops_per_get", "replied_share", "echo_p50_us", "p50_vs_echo"),
		Settings: []string{e.idleSetting(),
			"server: " + defaultsServer.String() + ", as `jakiro server` runs with no flags; shm in a temporary directory, tcp on 127.0.0.1",
			fmt.Sprintf("workload: one client (client.Dial at its defaults but the mode), one goroutine, synchronous GetTo of 32 B values, 16 B keys drawn uniformly from %d preloaded; every answer checked to be 32 B", e.Keys),
			"system=echo: fabricbench's echo target in its own process: a 32 B request written into its region, copied back by a goroutine spinning on the slot, READ again at once until there (the raw-fabric floor under one request at a time; the Go benchmark server/BenchmarkEchoLatency measures the same)",
			fmt.Sprintf("per point: a new connection, warmup %v, then measured %v; every request timed alone (HdrHistogram, 3 digits)", e.Warmup, e.Duration),
			fmt.Sprintf("each point the median of %d interleaved repetitions (every repetition runs echo and every mode on every fabric, in turn), min and max beside; p50_vs_echo: the medians' ratio on the same fabric", e.reps()),
			"fabric_ops_per_get: the client's WRITEs + READs per GET; replied_share: GETs the server answered with a WRITE into client memory (reply, and hybrid or auto where they chose it)"}}
	for _, fab := range fabrics {
		echo := spreadOf(field(samples[[2]string{fab, onebyoneEcho}], func(s oneByOneSample) float64 { return s.P50 }))
		for _, sys := range oneByOneSystems() {
			ss := samples[[2]string{fab, sys}]
			if len(ss) == 0 {
				continue
			}
			p50 := spreadOf(field(ss, func(s oneByOneSample) float64 { return s.P50 }))
			p99 := spreadOf(field(ss, func(s oneByOneSample) float64 { return s.P99 }))
			ops := spreadOf(field(ss, func(s oneByOneSample) float64 { return float64(s.Ops) }))
			fops := spreadOf(field(ss, func(s oneByOneSample) float64 { return s.FabricOps }))
			rep := spreadOf(field(ss, func(s oneByOneSample) float64 { return s.Replied }))
			ratio := ""
			if echo.Med > 0 {
				ratio = fmt.Sprintf("%.2f", p50.Med/echo.Med)
			}
			t.add(append(append(append([]any{fab, sys, p50.N}, p50.vals()...), p99.vals()...),
				int64(ops.Med), fops.Med, rep.Med, echo.Med, ratio)...)
		}
	}
	return t
}

// field is f of every sample.
func field[S any](ss []S, f func(S) float64) []float64 {
	out := make([]float64, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

// timeOneByOne runs do back to back for warm, calls measuring (if not
// nil), then runs do for d timing each call alone, and returns the
// latencies' p50 and p99 in µs and the count.
func timeOneByOne(ctx context.Context, warm, d time.Duration, measuring func(), do func() error) (p50, p99 float64, n int64, err error) {
	for t0 := time.Now(); time.Since(t0) < warm; {
		if err := do(); err != nil {
			return 0, 0, 0, err
		}
	}
	if measuring != nil {
		measuring()
	}
	h := newLatency()
	end := time.Now().Add(d)
	for {
		t0 := time.Now()
		if err := do(); err != nil {
			return 0, 0, 0, err
		}
		t1 := time.Now()
		h.RecordValue(int64(t1.Sub(t0)))
		if t1.After(end) {
			break
		}
		// The context only now and then: it costs a lock.
		if h.TotalCount()&1023 == 0 && ctx.Err() != nil {
			return 0, 0, 0, ctx.Err()
		}
	}
	return quantileUS(h, 50), quantileUS(h, 99), h.TotalCount(), nil
}

func quantileUS(h *hdr.Histogram, q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1e3 }

// echoPoint is one repetition of the echo floor on a new connection.
func (e *env) echoPoint(addr string) (oneByOneSample, error) {
	ctx, cancel := context.WithTimeout(e.Ctx, 30*time.Second)
	defer cancel()
	c, err := fabricbench.DialEcho(ctx, addr)
	if err != nil {
		return oneByOneSample{}, err
	}
	defer c.Close()
	p50, p99, n, err := timeOneByOne(e.Ctx, e.Warmup, e.Duration, nil, c.RoundTrip)
	return oneByOneSample{P50: p50, P99: p99, Ops: n}, err
}

// getPoint is one repetition of a mode: a new client, GETs one at a time.
func (e *env) getPoint(addr string, m client.Mode, ks *keySet) (oneByOneSample, error) {
	ctx, cancel := context.WithTimeout(e.Ctx, 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.WithMode(m))
	if err != nil {
		return oneByOneSample{}, err
	}
	defer c.Close()
	var dst []byte
	x := uint64(0x9e3779b97f4a7c15)
	get := func() error {
		// xorshift: a uniform key without a lock or an allocation.
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		k := ks.keys[x%uint64(len(ks.keys))]
		var err error
		if dst, err = c.GetTo(ctx, k, dst[:0]); err != nil {
			return fmt.Errorf("GET %s: %w", k, err)
		}
		if len(dst) != 32 {
			return fmt.Errorf("GET %s: %d bytes, want 32", k, len(dst))
		}
		return nil
	}
	var before client.Counters
	p50, p99, n, err := timeOneByOne(e.Ctx, e.Warmup, e.Duration, func() { before = c.Counters() }, get)
	if err != nil {
		return oneByOneSample{}, err
	}
	d := c.Counters().Sub(before)
	s := oneByOneSample{P50: p50, P99: p99, Ops: n, FabricOps: d.FabricOpsPerOp()}
	if d.Ops > 0 {
		s.Replied = float64(d.Replied) / float64(d.Ops)
	}
	return s, nil
}

// oneByOnePlot: a row per fabric, p50 (left) and p99 (right) of each
// system (median, min–max), the echo floor first.
func oneByOnePlot(path string, fabrics []string, samples map[[2]string][]oneByOneSample) error {
	var rows [][]*plot.Plot
	for _, fab := range fabrics {
		var row []*plot.Plot
		for _, q := range []struct {
			name string
			f    func(oneByOneSample) float64
		}{{"p50", func(s oneByOneSample) float64 { return s.P50 }}, {"p99", func(s oneByOneSample) float64 { return s.P99 }}} {
			bars := []series{{Name: q.name}}
			var labels []string
			for _, sys := range oneByOneSystems() {
				ss := samples[[2]string{fab, sys}]
				if len(ss) == 0 {
					continue
				}
				bars[0].addSpread(float64(len(labels)), spreadOf(field(ss, q.f)))
				labels = append(labels, sys)
			}
			p, err := barPanel(fmt.Sprintf("One GET at a time, %s: %s (median, min–max)", fab, q.name), "latency (µs)", labels, bars)
			if err != nil {
				return err
			}
			row = append(row, p)
		}
		rows = append(rows, row)
	}
	return plotGrid(path, rows)
}

package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"

	"github.com/jakiro-kv/jakiro/client"
)

// runServers: one client over 1, 2 and 3 servers on loopback tcp, keys
// spread by the client's rendezvous hashing. Each server is a process
// with one busy-polling partition; on a 2-core machine three servers and
// the load generator share two cores, so this shows the cost of the
// spread (routing, split batches) more than scaling. Repetitions are
// interleaved (every server count once per round) and reported as the
// median with min–max.
func runServers(e *env) error {
	counts := []int{1, 2, 3}
	reps := 3
	type cfg struct {
		name    string
		clients int
		window  int
	}
	cfgs := []cfg{{"sync 2 clients", 2, 1}, {"pipelined window 8", 1, 8}}
	if e.Quick {
		cfgs = cfgs[1:]
	}
	addrs, stop, err := e.tcpServers(counts[len(counts)-1])
	defer stop()
	if err != nil {
		return err
	}
	ks := newKeySet(e.Keys, sizeDist{Fixed: 32})
	// Each list's servers get every key (a cache keeps what it is given),
	// so every round reads keys that are there.
	for _, n := range counts {
		if err := preload(e.Ctx, strings.Join(addrs[:n], ","), ks); err != nil {
			return fmt.Errorf("preload over %d servers: %w", n, err)
		}
	}
	type key struct{ c, n int }
	res := map[key][]loadResult{}
	for rep := range reps {
		for ci, c := range cfgs {
			for _, n := range counts {
				r, err := e.point(fmt.Sprintf("round %d: %s, %d servers", rep+1, c.name, n),
					loadSpec{Addr: strings.Join(addrs[:n], ","), Mode: client.ModeRFP, Clients: c.clients, Window: c.window, GetRatio: 0.95}, ks)
				if err != nil {
					return err
				}
				res[key{ci, n}] = append(res[key{ci, n}], r)
			}
		}
	}
	t := &table{Name: "servers", Cols: []string{"config", "servers", "clients", "window", "reps", "mops_median", "mops_min", "mops_max",
		"p50_us_median", "p99_us_median", "round_trips_per_op_median", "vs_1_server"},
		Settings: []string{e.idleSetting(), "server: " + serverOpts{Partitions: e.Partitions}.withDefaults().String() + " (each)",
			"fabric: tcp on loopback, every server a separate process; keys spread by the client's rendezvous hashing",
			fmt.Sprintf("keys: %d x 16 B, every key preloaded on every server list", e.Keys),
			fmt.Sprintf("per point: warmup %v, measured %v; %d interleaved rounds, median and min-max", e.Warmup, e.Duration, reps),
			"workload: 95% GET, uniform, 32 B values, RFS auto, mode rfp; a window-8 batch is split per server, the parts run in parallel"}}
	var ss []series
	var lo, hi [][]float64
	for ci, c := range cfgs {
		s := series{Name: c.name}
		var l, h []float64
		base := 0.0
		for _, n := range counts {
			rs := res[key{ci, n}]
			mops := medianOf(rs, func(r loadResult) float64 { return r.Mops })
			if n == counts[0] {
				base = mops
			}
			mn, mx := rangeOf(rs, func(r loadResult) float64 { return r.Mops })
			t.add(c.name, n, c.clients, c.window, len(rs), mops, mn, mx,
				medianOf(rs, func(r loadResult) float64 { return r.P(50) }),
				medianOf(rs, func(r loadResult) float64 { return r.P(99) }),
				medianOf(rs, func(r loadResult) float64 { return r.RoundTrips() }), mops/base)
			s.add(float64(n), mops)
			l, h = append(l, mn), append(h, mx)
		}
		ss, lo, hi = append(ss, s), append(lo, l), append(hi, h)
	}
	png := e.png("servers")
	if err := rangePlot(png, "One client over N servers, loopback tcp, 32 B, 95% GET (median, min-max)", "servers", "Mops", ss, lo, hi); err != nil {
		return err
	}
	return e.done(t, png)
}

// tcpServers starts n server processes on loopback tcp, or takes the
// first n of --addr's list; stop ends what it started.
func (e *env) tcpServers(n int) (addrs []string, stop func(), err error) {
	var procs []*serverProc
	stop = func() {
		for _, p := range procs {
			p.Stop()
		}
	}
	if e.Addr != "" {
		if addrs, err = client.SplitAddrs(e.Addr); err == nil && len(addrs) < n {
			err = fmt.Errorf("servers: --addr lists %d servers, the experiment needs %d", len(addrs), n)
		}
		if err != nil {
			return nil, stop, err
		}
		return addrs[:n], stop, nil
	}
	for range n {
		p, err := startServer(serverOpts{Listen: "tcp://127.0.0.1:0", Partitions: e.Partitions})
		if err != nil {
			return nil, stop, err
		}
		procs = append(procs, p)
		addrs = append(addrs, p.Addr)
	}
	return addrs, stop, nil
}

func medianOf(rs []loadResult, f func(loadResult) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func rangeOf(rs []loadResult, f func(loadResult) float64) (lo, hi float64) {
	for i, r := range rs {
		x := f(r)
		if i == 0 || x < lo {
			lo = x
		}
		if i == 0 || x > hi {
			hi = x
		}
	}
	return lo, hi
}

// errXYs is a series' points with asymmetric error bars, for plotter.
type errXYs struct {
	plotter.XYs
	plotter.YErrors
}

// rangePlot is linePlot on a linear x axis with a min–max bar per point.
func rangePlot(path, title, xl, yl string, ss []series, lo, hi [][]float64) error {
	p := newPlot(title, xl, yl)
	p.Y.Min = 0
	// Room above the highest bar, a tick per measured x, room beside the end bars.
	headroom(p, append(ss, series{Y: slices.Concat(hi...)}))
	var ticks []plot.Tick
	for _, x := range ss[0].X {
		ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'f', -1, 64)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = ss[0].X[0]-0.3, ss[0].X[len(ss[0].X)-1]+0.3
	for i, s := range ss {
		l, pts, err := plotter.NewLinePoints(s.xys())
		if err != nil {
			return err
		}
		l.Color, pts.Color, pts.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
		sp := errXYs{XYs: s.xys(), YErrors: make(plotter.YErrors, len(s.Y))}
		for j, y := range s.Y {
			sp.YErrors[j].Low, sp.YErrors[j].High = y-lo[i][j], hi[i][j]-y
		}
		bars, err := plotter.NewYErrorBars(sp)
		if err != nil {
			return err
		}
		bars.Color = plotutil.Color(i)
		p.Add(l, pts, bars)
		p.Legend.Add(s.Name, l, pts)
	}
	return save(p, path)
}

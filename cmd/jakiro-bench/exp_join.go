package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"gonum.org/v1/plot"

	"github.com/jakiro-kv/jakiro/client"
)

// The join experiment's systems, as its CSV names them.
const (
	joinJakiro     = "jakiro"             // a burst against an otherwise idle server
	joinWithClient = "jakiro-with-client" // the same burst beside an established client doing GETs
	joinMemcached  = "memcached"          // connect + get + close against memcached on loopback
)

// joinSample is one burst of one repetition.
type joinSample struct {
	burstStats
	ServerCPU float64 // µs per join, from /proc/PID/task/*/schedstat (0 when not measured)
	// The same from /proc/PID/stat, in 10 ms ticks: a check on ServerCPU.
	ServerCPUTicks float64
	// An established client's GETs per second in a window before the
	// burst and from its release to the last child's close (joinWithClient).
	Alone, During float64
}

// runJoin: a burst of e.JoinProcs processes, released at once, each
// joining a `jakiro server` at its defaults (client.Dial, one GET of a
// 32 B value, Close) and exiting; beside it the same burst beside an
// established client doing GETs one at a time, and the same processes
// doing connect + get + close against memcached on loopback. Repetitions
// interleave the three.
func runJoin(e *env) error {
	if e.Addr != "" {
		return fmt.Errorf("join starts its own servers: --addr is not used")
	}
	fabrics := e.fabricsOr("shm")
	n := e.JoinProcs
	if e.Quick {
		n = min(n, 64)
	}
	ks := newKeySet(e.Keys, sizeDist{Fixed: 32})
	burstKeys := min(len(ks.keys), n)
	addrs := map[string]string{}
	pids := map[string]int{}
	for _, fab := range fabrics {
		o := defaultsServer
		o.OwnSession = e.JoinSessions // a daemon, apart from the burst and the established client
		if fab == "tcp" {
			o.Listen = loopbackTCP
		}
		p, err := startServer(o)
		if err != nil {
			return fmt.Errorf("%s server: %w", fab, err)
		}
		defer p.Stop()
		if err := preload(e.Ctx, p.Addr, ks); err != nil {
			return fmt.Errorf("%s preload: %w", fab, err)
		}
		addrs[fab], pids[fab] = p.Addr, p.cmd.Process.Pid
	}
	mcNote := fmt.Sprintf("memcached: memcached -t %d -m 512 -U 0 on 127.0.0.1, started for this run, %d keys set before the bursts; each child connects, sends one get, reads the value and END, closes", max(1, e.ExtThreads), burstKeys)
	mc, err := startExternalIn("memcached", e.ExtThreads, e.JoinSessions)
	if err != nil {
		e.logf("!! memcached skipped: %v", err)
		mcNote = fmt.Sprintf("memcached: skipped (%v)", err)
		mc = nil
	} else {
		defer mc.Stop()
		if err := setMemcachedKeys(mc.Addr, ks, burstKeys); err != nil {
			return fmt.Errorf("memcached: %w", err)
		}
	}
	specs := func(system, addr string) []joinChildSpec {
		out := make([]joinChildSpec, n)
		for i := range out {
			out[i] = joinChildSpec{System: system, Addr: addr, Key: string(ks.keys[i%burstKeys]), Size: 32}
		}
		return out
	}
	samples := map[[2]string][]joinSample{}
	add := func(sys, fab string, s joinSample) {
		k := [2]string{sys, fab}
		samples[k] = append(samples[k], s)
		msg := fmt.Sprintf("  %s %s: %d joins, p50 %.1f µs p99 %.1f µs, all answered in %.1f ms, all closed in %.1f ms",
			sys, fab, s.N, s.JoinP50, s.JoinP99, s.AllAnswered, s.AllClosed)
		if s.ServerCPU > 0 {
			msg += fmt.Sprintf(", server CPU %.1f µs/join", s.ServerCPU)
		}
		if s.Alone > 0 {
			msg += fmt.Sprintf("; established client %.0f GETs/s alone, %.0f during (%.2fx)", s.Alone, s.During, s.During/s.Alone)
		}
		if s.Errors > 0 {
			msg += fmt.Sprintf("; %d errors, the first: %s", s.Errors, s.FirstErr)
		}
		e.logf("%s", msg)
	}
	for rep := 0; rep < e.reps(); rep++ {
		e.logf("  rep %d/%d", rep+1, e.reps())
		for _, fab := range fabrics {
			s, err := e.burstAlone(specs("jakiro", addrs[fab]), pids[fab])
			if err != nil {
				return fmt.Errorf("%s burst: %w", fab, err)
			}
			add(joinJakiro, fab, s)
			s, err = e.burstBesideClient(addrs[fab], ks, specs("jakiro", addrs[fab]))
			if err != nil {
				return fmt.Errorf("%s burst beside a client: %w", fab, err)
			}
			add(joinWithClient, fab, s)
		}
		if mc != nil {
			s, err := e.burstAlone(specs("memcached", mc.Addr), mc.cmd.Process.Pid)
			if err != nil {
				return fmt.Errorf("memcached burst: %w", err)
			}
			add(joinMemcached, "tcp", s)
		}
	}
	t := joinTable(e, n, fabrics, samples, mcNote)
	png := e.png("join")
	if err := joinPlot(png, n, fabrics, samples); err != nil {
		return err
	}
	return e.done(t, png)
}

// burstAlone runs one burst and reads the server's CPU (pid) before the
// release and after every child has exited and the server has had 100 ms
// to finish their disconnects.
func (e *env) burstAlone(specs []joinChildSpec, pid int) (joinSample, error) {
	var cpu0, ticks0 time.Duration
	b, err := runBurst(e.Ctx, specs, e.JoinSessions, func(time.Time) { cpu0, ticks0 = procCPUPrecise(pid), procCPU(pid) })
	if err != nil {
		return joinSample{}, err
	}
	time.Sleep(100 * time.Millisecond)
	s := joinSample{burstStats: b.stats()}
	if s.Errors == s.N {
		return s, fmt.Errorf("%w: %s", errNoAnswer, s.FirstErr)
	}
	s.ServerCPU = float64((procCPUPrecise(pid) - cpu0).Nanoseconds()) / 1e3 / float64(s.N)
	s.ServerCPUTicks = float64((procCPU(pid) - ticks0).Nanoseconds()) / 1e3 / float64(s.N)
	return s, nil
}

// burstBesideClient runs an established client doing GETs one at a time
// (client.Dial at its defaults, one goroutine): e.Warmup, then e.Duration
// alone, then a burst. Its rate alone and from the burst's release to
// the last child's close go in the sample.
func (e *env) burstBesideClient(addr string, ks *keySet, specs []joinChildSpec) (joinSample, error) {
	ctx, cancel := context.WithTimeout(e.Ctx, 2*time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, addr)
	if err != nil {
		return joinSample{}, err
	}
	defer c.Close()
	p := startRateProbe(ctx, c, ks)
	time.Sleep(e.Warmup)
	a := time.Now()
	time.Sleep(e.Duration)
	z := time.Now()
	b, err := runBurst(e.Ctx, specs, e.JoinSessions, nil)
	if err != nil {
		p.finish()
		return joinSample{}, err
	}
	samples, perr := p.finish()
	if perr != nil {
		return joinSample{}, fmt.Errorf("established client: %w", perr)
	}
	s := joinSample{burstStats: b.stats()}
	if s.Errors == s.N {
		return s, fmt.Errorf("%w: %s", errNoAnswer, s.FirstErr)
	}
	s.Alone = rateIn(samples, a.UnixNano(), z.UnixNano())
	s.During = rateIn(samples, b.Release, s.LastClosed)
	return s, nil
}

// rateSample: ops GETs done by the Unix-ns instant t.
type rateSample struct{ t, ops int64 }

// rateProbe is a goroutine doing GETs one at a time, noting its count
// against the clock every 16 GETs (at most every 50 µs).
type rateProbe struct {
	stop    atomic.Bool
	done    chan error
	samples []rateSample
}

func startRateProbe(ctx context.Context, c *client.Client, ks *keySet) *rateProbe {
	p := &rateProbe{done: make(chan error, 1), samples: make([]rateSample, 0, 1<<16)}
	go func() {
		var dst []byte
		var err error
		x := uint64(0x9e3779b97f4a7c15)
		p.samples = append(p.samples, rateSample{time.Now().UnixNano(), 0})
		last := p.samples[0].t
		var n int64
		for !p.stop.Load() {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			if dst, err = c.GetTo(ctx, ks.keys[x%uint64(len(ks.keys))], dst[:0]); err != nil {
				break
			}
			if n++; n&15 == 0 {
				if t := time.Now().UnixNano(); t-last >= 50e3 {
					p.samples, last = append(p.samples, rateSample{t, n}), t
				}
			}
		}
		// The last count, whatever the stride: every window ends before it.
		p.samples = append(p.samples, rateSample{time.Now().UnixNano(), n})
		p.done <- err
	}()
	return p
}

// finish stops the probe and returns its samples.
func (p *rateProbe) finish() ([]rateSample, error) {
	p.stop.Store(true)
	err := <-p.done
	return p.samples, err
}

// rateIn is the ops per second between the Unix-ns instants a and b,
// the counts at a and b interpolated between the samples around them;
// 0 where the samples do not cover [a, b].
func rateIn(ss []rateSample, a, b int64) float64 {
	if b <= a || len(ss) < 2 || a < ss[0].t || b > ss[len(ss)-1].t {
		return 0
	}
	at := func(t int64) float64 {
		i := 1
		for ss[i].t < t {
			i++
		}
		p, q := ss[i-1], ss[i]
		if q.t == p.t {
			return float64(q.ops)
		}
		return float64(p.ops) + float64(q.ops-p.ops)*float64(t-p.t)/float64(q.t-p.t)
	}
	return (at(b) - at(a)) / (float64(b-a) / 1e9)
}

// setMemcachedKeys sets the first n keys of ks on memcached at addr.
func setMemcachedKeys(addr string, ks *keySet, n int) error {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(conn)
	for i := 0; i < n; i++ {
		if _, err := fmt.Fprintf(conn, "set %s 0 0 32\r\n%s\r\n", ks.keys[i], ks.value[:32]); err != nil {
			return err
		}
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		if line != "STORED\r\n" {
			return fmt.Errorf("set %s: %q", ks.keys[i], strings.TrimSpace(line))
		}
	}
	return nil
}

// joinSystems are the table's rows in order: each fabric's two, then
// memcached.
func joinSystems(fabrics []string) [][2]string {
	var out [][2]string
	for _, fab := range fabrics {
		out = append(out, [2]string{joinJakiro, fab}, [2]string{joinWithClient, fab})
	}
	return append(out, [2]string{joinMemcached, "tcp"})
}

// joinTable: per system, the medians over the repetitions of each
// burst's join p50 and p99, time to all answered and server CPU per join
// (min and max beside), the errors summed, and the ratios to memcached's
// medians; for the burst beside a client, that client's rate alone and
// during the burst.
func joinTable(e *env, n int, fabrics []string, samples map[[2]string][]joinSample, mcNote string) *table {
	t := &table{Name: "join", Cols: append(append(append(append([]string{"system", "fabric", "procs", "reps"},
		spreadCols("join_p50_us")...), spreadCols("join_p99_us")...), spreadCols("all_answered_ms")...),
		append(append([]string{"all_closed_ms", "close_p50_us"}, append(spreadCols("server_cpu_us_per_join"), "server_cpu_us_per_join_ticks")...),
			append([]string{"errors", "p50_vs_memcached", "p99_vs_memcached", "client_alone_ops_per_sec", "client_during_ops_per_sec"},
				spreadCols("client_during_vs_alone")...)...)...),
		Settings: []string{e.idleSetting(),
			"server: " + defaultsServer.String() + ", as `jakiro server` runs with no flags; shm in a temporary directory, tcp on 127.0.0.1",
			fmt.Sprintf("burst: %d processes (this binary re-executed), all started and READY, then released at once (EOF on a pipe they share); each joins once and exits; join = Dial (connect) to the first GET's answer of a 32 B value, one of %d keys; then Close, timed apart (close_p50_us)", n, min(e.Keys, n)),
			sessionsNote(e.JoinSessions, n),
			"jakiro: an RFP client (client.Dial at its defaults: mode auto) per process, the server otherwise idle; jakiro-with-client: the same burst beside an established client of this process doing GETs one at a time (client_*: its GETs per second in a window of the measured time before the burst, and from the release to the last child's close)",
			mcNote,
			"all_answered_ms, all_closed_ms: from the release to the last child's answer, close; server_cpu_us_per_join: the server process's CPU (the sum of /proc/PID/task/*/schedstat, every thread, ns; *_ticks: the same from /proc/PID/stat in 10 ms ticks) from the release to 100 ms after the last child exited, over the joins; errors: children that got no answer, summed over the repetitions and left out of the times",
			fmt.Sprintf("established client: warmup %v, alone %v; each value the median of %d interleaved repetitions (every repetition runs every row once, in turn), min and max beside; *_vs_memcached: the medians' ratio", e.Warmup, e.Duration, e.reps())}}
	mc := samples[[2]string{joinMemcached, "tcp"}]
	mcP50 := spreadOf(field(mc, func(s joinSample) float64 { return s.JoinP50 })).Med
	mcP99 := spreadOf(field(mc, func(s joinSample) float64 { return s.JoinP99 })).Med
	for _, k := range joinSystems(fabrics) {
		ss := samples[k]
		if len(ss) == 0 {
			continue
		}
		p50 := spreadOf(field(ss, func(s joinSample) float64 { return s.JoinP50 }))
		p99 := spreadOf(field(ss, func(s joinSample) float64 { return s.JoinP99 }))
		all := spreadOf(field(ss, func(s joinSample) float64 { return s.AllAnswered }))
		closed := spreadOf(field(ss, func(s joinSample) float64 { return s.AllClosed }))
		cl := spreadOf(field(ss, func(s joinSample) float64 { return s.CloseP50 }))
		errs := 0
		for _, s := range ss {
			errs += s.Errors
		}
		cpu := []any{"", "", "", ""}
		if k[0] != joinWithClient {
			cpu = append(spreadOf(field(ss, func(s joinSample) float64 { return s.ServerCPU })).vals(),
				spreadOf(field(ss, func(s joinSample) float64 { return s.ServerCPUTicks })).Med)
		}
		vs50, vs99 := "", ""
		if k[0] != joinMemcached && mcP50 > 0 {
			vs50, vs99 = fmt.Sprintf("%.2f", p50.Med/mcP50), fmt.Sprintf("%.2f", p99.Med/mcP99)
		}
		est := []any{"", "", "", "", ""}
		if k[0] == joinWithClient {
			r := spreadOf(field(ss, func(s joinSample) float64 {
				if s.Alone == 0 {
					return 0
				}
				return s.During / s.Alone
			}))
			est = []any{spreadOf(field(ss, func(s joinSample) float64 { return s.Alone })).Med,
				spreadOf(field(ss, func(s joinSample) float64 { return s.During })).Med, r.Med, r.Min, r.Max}
		}
		row := append([]any{k[0], k[1], ss[0].N, len(ss)}, p50.vals()...)
		row = append(append(append(row, p99.vals()...), all.vals()...), closed.Med, cl.Med)
		row = append(append(append(row, cpu...), errs, vs50, vs99), est...)
		t.add(row...)
	}
	return t
}

// joinPlot: join p50 and p99 (µs), the time until all had answered (ms),
// and the established client's rate alone and during the burst.
func joinPlot(path string, n int, fabrics []string, samples map[[2]string][]joinSample) error {
	lat := []series{{Name: "join p50"}, {Name: "join p99"}}
	all := []series{{Name: "all answered"}, {Name: "all closed"}}
	var labels []string
	for _, k := range joinSystems(fabrics) {
		ss := samples[k]
		if len(ss) == 0 {
			continue
		}
		x := float64(len(labels))
		labels = append(labels, strings.Replace(k[0], "jakiro-with-client", "jakiro+client", 1)+" "+k[1])
		lat[0].addSpread(x, spreadOf(field(ss, func(s joinSample) float64 { return s.JoinP50 })))
		lat[1].addSpread(x, spreadOf(field(ss, func(s joinSample) float64 { return s.JoinP99 })))
		all[0].addSpread(x, spreadOf(field(ss, func(s joinSample) float64 { return s.AllAnswered })))
		all[1].addSpread(x, spreadOf(field(ss, func(s joinSample) float64 { return s.AllClosed })))
	}
	rate := []series{{Name: "alone"}, {Name: "during the burst"}}
	var rl []string
	for _, fab := range fabrics {
		ss := samples[[2]string{joinWithClient, fab}]
		if len(ss) == 0 {
			continue
		}
		x := float64(len(rl))
		rl = append(rl, fab)
		rate[0].addSpread(x, spreadOf(field(ss, func(s joinSample) float64 { return s.Alone / 1e3 })))
		rate[1].addSpread(x, spreadOf(field(ss, func(s joinSample) float64 { return s.During / 1e3 })))
	}
	var ps []*plot.Plot
	for _, p := range []struct {
		title, yl string
		labels    []string
		ss        []series
	}{
		{fmt.Sprintf("%d processes join at once: Dial + first GET", n), "µs", labels, lat},
		{"From the release until all had answered, closed", "ms", labels, all},
		{"An established client's GETs, one at a time", "k GETs/s", rl, rate},
	} {
		if len(p.labels) == 0 {
			continue
		}
		pl, err := barPanel(p.title+" (median, min–max)", p.yl, p.labels, p.ss)
		if err != nil {
			return err
		}
		ps = append(ps, pl)
	}
	return barPanels(path, ps...)
}

// sessionsNote says how the processes of a join run share the CPU.
func sessionsNote(sessions bool, n int) string {
	if sessions {
		return fmt.Sprintf("--join-sessions, as services run (autogroup enabled: %s): the burst's processes are started by one spawner in a session of its own (the service that forks workers in a spike), each server (jakiro, memcached) in a session of its own (a daemon), the established client in this process's; the kernel shares the CPU between these groups first, so the burst is one group, not %d peers of every other process", autogroup(), n)
	}
	return fmt.Sprintf("sessions: every process in this one (autogroup enabled: %s), so the %d children, the servers and the established client are peers in the CPU's fair share (--join-sessions runs each service in a session of its own)", autogroup(), n)
}

// autogroup says whether the kernel groups the CPU by session
// (/proc/sys/kernel/sched_autogroup_enabled).
func autogroup() string {
	b, err := os.ReadFile("/proc/sys/kernel/sched_autogroup_enabled")
	switch {
	case err != nil:
		return "unknown"
	case strings.TrimSpace(string(b)) == "1":
		return "yes"
	}
	return "no"
}

package main

import (
	"fmt"
	"github.com/jakiro-kv/jakiro/client"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/magiconair/properties"

	"github.com/jakiro-kv/jakiro/ycsb"
)

// paperWorkload is workloads/paper-zipfian (95% GET, 5% PUT, zipfian),
// used when that file is not found (jakiro-bench run outside the
// repository).
const paperWorkload = `workload=core
recordcount=100000
operationcount=100000000
fieldcount=1
fieldlength=32
readallfields=true
writeallfields=true
readproportion=0.95
updateproportion=0.05
scanproportion=0
insertproportion=0
requestdistribution=zipfian
table=
keyprefix=k
zeropadding=15
insertorder=ordered
`

func paperProps(name string) (*properties.Properties, string) {
	path := "workloads/" + name
	if b, err := os.ReadFile(path); err == nil {
		if p, err := properties.Load(b, properties.UTF8); err == nil {
			return p, path
		}
	}
	p := properties.MustLoadString(paperWorkload)
	if name == "paper-uniform" {
		p.Set("requestdistribution", "uniform")
	}
	return p, "built-in copy of " + path
}

// system is one database under go-ycsb: a Jakiro server configuration,
// Redis, memcached, or go-ycsb's no-op database (the load generator's own
// ceiling on this machine).
type system struct {
	name  string
	db    string     // go-ycsb database
	srv   serverOpts // jakiro only
	mode  string     // jakiro only: the driver's mode (jakiro.mode); "" its default
	tuned bool       // a hand-tuned jakiro configuration
	// door: db is memcached, served by a jakiro server's memcached door
	// (srv, with Memcached set); mcThreads: memcached's -t (default 1).
	door      bool
	mcThreads int
	// rfpIdle: an RFP client stays connected to the door's server, idle,
	// through the run (door only).
	rfpIdle bool
	// hogs: CPU-bound processes beside each run phase (exp_busyhost.go).
	hogs int
}

// compareSystems: Jakiro at `jakiro server`'s defaults, Jakiro with the
// flags a user might tune (one or two partitions, a longer spin, idle
// polling), Redis, memcached and the no-op database.
var compareSystems = []system{
	{name: "jakiro-defaults", db: "jakiro", srv: serverOpts{Defaults: true}},
	{name: "jakiro-p1", db: "jakiro", srv: serverOpts{Partitions: 1}, tuned: true},
	{name: "jakiro-p2", db: "jakiro", srv: serverOpts{Partitions: 2}, tuned: true},
	{name: "jakiro-p1-spin1ms", db: "jakiro", srv: serverOpts{Partitions: 1, SpinIdle: time.Millisecond}, tuned: true},
	{name: "jakiro-p1-idlepoll", db: "jakiro", srv: serverOpts{Partitions: 1, IdlePoll: true}, tuned: true},
	{name: "redis", db: "redis"},
	{name: "memcached", db: "memcached"},
	{name: "noop", db: "basic"},
}

// compareTCPSystems: Jakiro over loopback tcp at the server's and the
// driver's defaults, then in each client mode, against the same Redis,
// memcached and no-op database.
var compareTCPSystems = []system{
	{name: "jakiro-tcp", db: "jakiro", srv: serverOpts{Defaults: true, Listen: loopbackTCP}},
	{name: "jakiro-tcp-rfp", db: "jakiro", srv: serverOpts{Defaults: true, Listen: loopbackTCP}, mode: "rfp", tuned: true},
	{name: "jakiro-tcp-reply", db: "jakiro", srv: serverOpts{Defaults: true, Listen: loopbackTCP}, mode: "reply", tuned: true},
	{name: "jakiro-tcp-hybrid", db: "jakiro", srv: serverOpts{Defaults: true, Listen: loopbackTCP}, mode: "hybrid", tuned: true},
	{name: "redis", db: "redis"},
	{name: "memcached", db: "memcached"},
	{name: "noop", db: "basic"},
}

const loopbackTCP = "tcp://127.0.0.1:0"

// runCompare: go-ycsb against Jakiro on shm at its defaults and tuned, at
// 4 and 64 threads.
func runCompare(e *env) error {
	threads, systems := []int{4, 64}, compareSystems
	if e.Quick {
		threads = []int{4}
		systems = []system{compareSystems[0], compareSystems[1], compareSystems[len(compareSystems)-1]}
	}
	return compareRun(e, "compare", "jakiro: server process on the shm fabric", e.pickSystems(systems), e.pickThreads(threads))
}

// pickSystems keeps the systems --compare-systems names (all if unset).
func (e *env) pickSystems(all []system) []system {
	if len(e.CompareSystems) == 0 {
		return all
	}
	var out []system
	for _, s := range all {
		if slices.Contains(e.CompareSystems, s.name) {
			out = append(out, s)
		}
	}
	return out
}

// pickThreads is --ycsb-threads, else the experiment's own.
func (e *env) pickThreads(def []int) []int {
	if len(e.YCSBThreads) > 0 {
		return e.YCSBThreads
	}
	return def
}

// runCompareTCP: the same over loopback tcp, every Jakiro client mode, at
// 1 thread (one operation at a time: latency) and 4.
func runCompareTCP(e *env) error {
	threads, systems := []int{1, 4}, compareTCPSystems
	if e.Quick {
		threads = []int{1}
		systems = []system{compareTCPSystems[0], compareTCPSystems[len(compareTCPSystems)-1]}
	}
	return compareRun(e, "compare_tcp", "jakiro: server process on tcp://127.0.0.1 at its defaults; jakiro-tcp-*: the driver's mode", e.pickSystems(systems), e.pickThreads(threads))
}

// compareRun runs one go-ycsb workload (95% GET / 5% PUT, zipfian, 16 B
// keys, 32 B values) in this process against every system at each thread
// count, one operation at a time per thread (go-ycsb's default). Each
// repetition starts every server in turn, loads it, runs every thread
// count and stops it; the table has each point's median over the
// repetitions with min and max, and ratios of medians.
func compareRun(e *env, name, jakiroNote string, systems []system, threads []int) error {
	runDur := 2 * e.Duration
	base, source := paperProps("paper-zipfian")
	records := min(e.Keys, int(base.GetInt64("recordcount", 100000)))
	ops := map[string]map[int][]float64{}
	last := map[string]map[int]compareResult{}
	cpus := map[string]map[int][]float64{}    // the load generator's (client's) CPU µs per op
	srvCPUs := map[string]map[int][]float64{} // the server's
	for _, s := range systems {
		ops[s.name], last[s.name], cpus[s.name], srvCPUs[s.name] = map[int][]float64{}, map[int]compareResult{}, map[int][]float64{}, map[int][]float64{}
	}
	for rep := 0; rep < e.reps(); rep++ {
		for _, s := range systems {
			if err := compareOne(e, s, base, records, threads, runDur, rep, func(th int, r compareResult) {
				ops[s.name][th] = append(ops[s.name][th], r.OpsPerSec())
				last[s.name][th] = r
				cpus[s.name][th] = append(cpus[s.name][th], r.cpuPerOp())
				srvCPUs[s.name][th] = append(srvCPUs[s.name][th], r.serverPerOp())
			}); err != nil {
				return err
			}
		}
	}
	t := &table{Name: name, Cols: append(append([]string{"system", "threads", "reps"}, spreadCols("ops_per_sec")...),
		"p50_us", "p99_us", "errors", "round_trips_per_op", "client_us_per_op", "server_us_per_op", "vs_best_tuned", "vs_redis", "vs_memcached", "vs_noop"),
		Settings: []string{e.idleSetting(), "workload: " + source + fmt.Sprintf(" (recordcount=%d), batch.size=1", records),
			fmt.Sprintf("go-ycsb v1.0.1 core workload in this process; run phase bounded to %v per point; each point the median of %d interleaved repetitions (min, max beside)", runDur, e.reps()),
			systems[0].name + ": " + systems[0].srv.withDefaults().String() + "; jakiro-* tuned: " + tunedSettings(systems),
			jakiroNote + "; driver defaults otherwise (jakiro.mode=auto: hybrid, starting by fetching on shm and with replies on tcp; jakiro.rfs=auto; jakiro.conns=auto: one client.Client shared by every thread)",
			"redis: redis-server --save '' --appendonly no --io-threads 1 on 127.0.0.1 (go-ycsb's redis driver, its default hash datatype: HSET/HMGET)",
			fmt.Sprintf("memcached: memcached -t %d -m 512 on 127.0.0.1 (jakiro-bench's gomemcache driver, compact records)", max(1, e.ExtThreads)),
			"noop: go-ycsb's basic database, silent: the load generator's own ceiling here",
			"latency columns: the last repetition's; client_us_per_op: this process's CPU (go-ycsb and the driver) per operation, median; server_us_per_op: the server process's CPU per operation (every thread, /proc in 10 ms ticks; 0 for noop), median; vs_* columns: ratios of medians (vs_best_tuned: the best jakiro-* tuned median at the same threads)"}}
	var labels []string
	for _, th := range threads {
		labels = append(labels, fmt.Sprintf("%d threads", th))
	}
	var ss []series
	for _, s := range systems {
		sr := series{Name: s.name}
		for i, th := range threads {
			sp := spreadOf(ops[s.name][th])
			r := last[s.name][th]
			trips := ""
			if r.HaveCounters {
				trips = fmt.Sprintf("%.3f", r.Counters.FabricOpsPerOp())
			}
			ratio := func(o string) string {
				if x := spreadOf(ops[o][th]).Med; x > 0 {
					return fmt.Sprintf("%.2f", sp.Med/x)
				}
				return ""
			}
			best := ""
			if b := bestTuned(systems, ops, th); b > 0 && strings.HasPrefix(s.name, "jakiro") {
				best = fmt.Sprintf("%.2f", sp.Med/b)
			}
			t.add(append(append([]any{s.name, th, sp.N}, sp.vals()...), float64(r.Total.ValueAtQuantile(50))/1e3,
				float64(r.Total.ValueAtQuantile(99))/1e3, r.Errors, trips, spreadOf(cpus[s.name][th]).Med, spreadOf(srvCPUs[s.name][th]).Med, best, ratio("redis"), ratio("memcached"), ratio("noop"))...)
			sr.addSpread(float64(i), spread{Med: sp.Med / 1e6, Min: sp.Min / 1e6, Max: sp.Max / 1e6, N: sp.N})
		}
		ss = append(ss, sr)
	}
	for _, th := range threads {
		d := spreadOf(ops[systems[0].name][th]).Med
		e.logf("  %d threads: %s %.0f ops/s = %.2fx best tuned, %.1fx redis, %.1fx memcached, %.2fx noop", th, systems[0].name, d,
			d/bestTuned(systems, ops, th), d/spreadOf(ops["redis"][th]).Med, d/spreadOf(ops["memcached"][th]).Med, d/spreadOf(ops["noop"][th]).Med)
	}
	png := e.png(name)
	if err := barPlot(png, "go-ycsb 95% GET / 5% PUT, zipfian, 16 B keys, 32 B values (median, min–max)", "Mops", labels, ss); err != nil {
		return err
	}
	return e.done(t, png)
}

func tunedSettings(systems []system) string {
	var parts []string
	for _, s := range systems {
		if s.tuned {
			parts = append(parts, s.name+": "+s.srv.withDefaults().String())
		}
	}
	return strings.Join(parts, "; ")
}

func bestTuned(systems []system, ops map[string]map[int][]float64, th int) float64 {
	best := 0.0
	for _, s := range systems {
		if s.tuned {
			best = max(best, spreadOf(ops[s.name][th]).Med)
		}
	}
	return best
}

// compareOne starts a system, loads it and runs every thread count once.
func compareOne(e *env, s system, base *properties.Properties, records int, threads []int, runDur time.Duration, rep int, got func(int, compareResult)) error {
	p := properties.NewProperties()
	p.Merge(base)
	p.Set("recordcount", fmt.Sprint(records))
	stop := func() {}
	pid := 0 // the server's process, whose CPU time is counted per op (procCPU(0) is 0: noop)
	switch {
	case s.door:
		o := s.srv
		o.Memcached = true
		srv, err := startServer(o)
		if err != nil {
			return err
		}
		stop, pid = srv.Stop, srv.cmd.Process.Pid
		p.Set("memcached.addr", srv.DoorAddr)
		if s.rfpIdle {
			c, err := client.Dial(e.Ctx, srv.Addr)
			if err != nil {
				srv.Stop()
				return fmt.Errorf("%s: dialling the idle RFP client: %w", s.name, err)
			}
			stop = func() { c.Close(); srv.Stop() }
		}
	case s.db == "jakiro":
		srv, err := startServer(s.srv)
		if err != nil {
			return err
		}
		stop, pid = srv.Stop, srv.cmd.Process.Pid
		p.Set(ycsb.PropAddr, srv.Addr)
		if s.mode != "" {
			p.Set(ycsb.PropMode, s.mode)
		}
	case s.db == "basic":
		p.Set("basicdb.verbose", "false")
	default:
		mt := e.ExtThreads
		if s.mcThreads > 0 {
			mt = s.mcThreads
		}
		x, err := startExternal(s.db, mt)
		if err != nil {
			return err
		}
		stop, pid = x.Stop, x.cmd.Process.Pid
		p.Set(s.db+".addr", x.Addr)
		p.Set("redis.mode", "single")
	}
	defer stop()
	p.Set("threadcount", "4")
	lr, err := ycsb.Run(e.Ctx, ycsb.RunConfig{DB: s.db, Props: p, Load: true})
	if err != nil {
		return fmt.Errorf("%s load: %w", s.name, err)
	}
	if lr.Errors > 0 {
		return fmt.Errorf("%s load: %d errors, first %v", s.name, lr.Errors, lr.FirstError)
	}
	for _, th := range threads {
		p.Set("threadcount", fmt.Sprint(th))
		h, err := startHogs(s.hogs)
		if err != nil {
			return err
		}
		cpu0, srv0 := selfCPU(), procCPU(pid)
		r, err := ycsb.Run(e.Ctx, ycsb.RunConfig{DB: s.db, Props: p, Duration: runDur})
		h.stop()
		if err != nil {
			return fmt.Errorf("%s run: %w", s.name, err)
		}
		cr := compareResult{r, selfCPU() - cpu0, procCPU(pid) - srv0}
		got(th, cr)
		e.logf("  rep %d %-19s %3d threads: %9.0f ops/s  p50 %7.2f µs  p99 %8.2f µs  client %.2f µs/op  server %.2f µs/op  errors %d", rep+1, s.name, th, r.OpsPerSec(),
			float64(r.Total.ValueAtQuantile(50))/1e3, float64(r.Total.ValueAtQuantile(99))/1e3, cr.cpuPerOp(), cr.serverPerOp(), r.Errors)
		if r.Errors > 0 {
			e.logf("    first error: %v", r.FirstError)
		}
	}
	return nil
}

// compareResult is one go-ycsb run, this process's CPU time over it and
// the server process's (0 with no server).
type compareResult struct {
	*ycsb.Result
	cpu, srvCPU time.Duration
}

func (r compareResult) cpuPerOp() float64 { return r.perOp(r.cpu) }

func (r compareResult) serverPerOp() float64 { return r.perOp(r.srvCPU) }

func (r compareResult) perOp(d time.Duration) float64 {
	if r.Ops == 0 {
		return 0
	}
	return float64(d.Nanoseconds()) / 1e3 / float64(r.Ops)
}

package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
)

// A busy host: the server and go-ycsb share the machine with CPU-bound
// processes, one per core but one, as on a machine that also runs batch
// jobs. A busy-polling server meets there a scheduler that gives each
// runnable thread slices of milliseconds (server/crowd.go).

// envHog makes this binary a CPU hog: it spins until killed.
const envHog = "JAKIRO_BENCH_HOG"

// hogSink keeps the hog's loop from being an empty one.
var hogSink uint64

// hogIfRequested spins forever when this process is a hog.
func hogIfRequested() {
	if os.Getenv(envHog) == "" {
		return
	}
	for {
		hogSink = hogSink*6364136223846793005 + 1
	}
}

// busyHostThreads: go-ycsb threads per point.
var busyHostThreads = []int{1, 4}

// busyHostSystems: Jakiro at its defaults on shm and tcp, and memcached.
var busyHostSystems = []system{
	{name: "jakiro-shm", db: "jakiro", srv: serverOpts{Defaults: true}},
	{name: "jakiro-tcp", db: "jakiro", srv: serverOpts{Defaults: true, Listen: loopbackTCP}},
	{name: "memcached", db: "memcached"},
}

// hogsOf is how many hogs a busy-host point runs: one per core but one.
func hogsOf() int { return max(1, runtime.NumCPU()-1) }

// hogs are running CPU hogs.
type hogs []*exec.Cmd

// startHogs starts n hogs (GOMAXPROCS 1 each: one thread spins).
func startHogs(n int) (hogs, error) {
	var h hogs
	for i := 0; i < n; i++ {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), envHog+"=1", "GOMAXPROCS=1")
		if err := cmd.Start(); err != nil {
			h.stop()
			return nil, fmt.Errorf("hog: %w", err)
		}
		h = append(h, cmd)
	}
	return h, nil
}

func (h hogs) stop() {
	for _, c := range h {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
}

// runBusyHost: go-ycsb 95/5 zipfian at 1 and 4 threads against Jakiro at
// its defaults (shm, tcp) and memcached, each on a quiet host and beside
// hogsOf() CPU hogs, repetitions interleaved.
func runBusyHost(e *env) error {
	runDur := 2 * e.Duration
	base, source := paperProps("paper-zipfian")
	records := min(e.Keys, int(base.GetInt64("recordcount", 100000)))
	nh := hogsOf()
	type point struct {
		ops, cpu, srv []float64
		last          compareResult
	}
	pts := map[string]*point{}
	key := func(s string, th, h int) string { return s + "/" + strconv.Itoa(th) + "/" + strconv.Itoa(h) }
	for rep := 0; rep < e.reps(); rep++ {
		for _, s := range busyHostSystems {
			for _, h := range []int{0, nh} {
				s := s
				s.hogs = h
				if err := compareOne(e, s, base, records, busyHostThreads, runDur, rep, func(th int, r compareResult) {
					k := key(s.name, th, h)
					if pts[k] == nil {
						pts[k] = &point{}
					}
					pt := pts[k]
					pt.ops = append(pt.ops, r.OpsPerSec())
					pt.cpu, pt.srv = append(pt.cpu, r.cpuPerOp()), append(pt.srv, r.serverPerOp())
					pt.last = r
				}); err != nil {
					return err
				}
			}
		}
	}
	t := &table{Name: "busyhost", Cols: append(append([]string{"system", "ycsb_threads", "hogs", "reps"}, spreadCols("ops_per_sec")...),
		"p50_us", "p99_us", "errors", "client_us_per_op", "server_us_per_op", "ops_vs_quiet_host"),
		Settings: []string{e.idleSetting(), "workload: " + source + fmt.Sprintf(" (recordcount=%d)", records),
			fmt.Sprintf("go-ycsb v1.0.1 core workload in this process; run phase bounded to %v per point; each point the median of %d interleaved repetitions (min, max beside)", runDur, e.reps()),
			fmt.Sprintf("hogs: CPU-bound processes (one thread spinning each) running through the point's run phase; %d = one per core but one", nh),
			"jakiro-shm, jakiro-tcp: a jakiro server process at its defaults (no flags) on shm and on tcp://127.0.0.1, the driver at its defaults; memcached: memcached -t 1 -m 512 -U 0 on 127.0.0.1",
			"latency columns: the last repetition's; client_us_per_op, server_us_per_op: the load generator's and the server process's CPU per operation, medians; ops_vs_quiet_host: the median with hogs over the median without"}}
	labels := []string{}
	bars := []series{{Name: "quiet host"}, {Name: fmt.Sprintf("%d CPU hog(s) beside", nh)}}
	x := 0
	for _, s := range busyHostSystems {
		for _, th := range busyHostThreads {
			labels = append(labels, fmt.Sprintf("%s, %d thread(s)", s.name, th))
			quiet := spreadOf(pts[key(s.name, th, 0)].ops).Med
			for i, h := range []int{0, nh} {
				pt := pts[key(s.name, th, h)]
				sp := spreadOf(pt.ops)
				bars[i].addSpread(float64(x), spread{Med: sp.Med / 1e3, Min: sp.Min / 1e3, Max: sp.Max / 1e3, N: sp.N})
				vs := ""
				if h > 0 && quiet > 0 {
					vs = fmt.Sprintf("%.3f", sp.Med/quiet)
				}
				t.add(append(append([]any{s.name, th, h, sp.N}, sp.vals()...), float64(pt.last.Total.ValueAtQuantile(50))/1e3,
					float64(pt.last.Total.ValueAtQuantile(99))/1e3, pt.last.Errors, spreadOf(pt.cpu).Med, spreadOf(pt.srv).Med, vs)...)
				if h > 0 {
					e.logf("  %s, %d threads: %.0f ops/s beside %d hog(s) = %.2fx the quiet host's %.0f", s.name, th, sp.Med, h, sp.Med/quiet, quiet)
				}
			}
			x++
		}
	}
	png := e.png("busyhost")
	if err := barPlot(png, "go-ycsb 95/5 zipfian on a quiet host and beside CPU hogs (median, min–max)", "k ops/s", labels, bars); err != nil {
		return err
	}
	return e.done(t, png)
}

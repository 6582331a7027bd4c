package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/jakiro-kv/jakiro/client"
)

// env is what every experiment gets: where to write, how long each point
// runs, and the server to use (started per experiment unless Addr is set).
type env struct {
	Ctx        context.Context
	Out        string
	Addr       string
	Duration   time.Duration // per measured point
	Warmup     time.Duration
	Keys       int
	Partitions int
	Quick      bool // fewer points (smoke tests)
	Reps       int  // interleaved repetitions per point (median, min, max)
	// QuietWait bounds how long an experiment waits for an idle machine;
	// IdleAtStart is the idle fraction seen then.
	QuietWait   time.Duration
	IdleAtStart float64
	M           machineInfo
	Log         io.Writer
	// The scale experiment's server partition counts, load processes and
	// loads (connections per process x window).
	ScaleParts []int
	ScaleProcs int
	ScaleLoads [][2]int
	// compare, comparetcp: which systems, at which go-ycsb thread counts,
	// and memcached's worker threads.
	ClientMode     client.Mode // callers, scale
	CompareSystems []string
	YCSBThreads    []int
	ExtThreads     int
	// onebyone, join: the fabrics (nil: the experiment's own), and the
	// join burst's process count.
	Fabrics   []string
	JoinProcs int
	// join: the burst, each server and this process each in a session of
	// its own (envJoinSpawn).
	JoinSessions bool
}

func commonFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "out", Value: "results", Usage: "directory for CSV and PNG files"},
		&cli.StringFlag{Name: "addr", Usage: "use this running server (fabric URL) instead of starting one"},
		&cli.DurationFlag{Name: "duration", Value: 1500 * time.Millisecond, Usage: "measured time per point"},
		&cli.DurationFlag{Name: "warmup", Value: 300 * time.Millisecond, Usage: "unmeasured time before each point"},
		&cli.IntFlag{Name: "keys", Value: 100000, Usage: "items preloaded (16 B keys)"},
		&cli.IntFlag{Name: "partitions", Value: 1, Usage: "server partitions (each busy-polls a core)"},
		&cli.IntFlag{Name: "client-procs", Value: 1, Usage: "GOMAXPROCS of the load generator (compare, comparetcp, ycsbthreads: the machine's unless given, as go-ycsb runs)"},
		&cli.BoolFlag{Name: "quick", Usage: "fewer points (smoke test)"},
		&cli.IntFlag{Name: "reps", Value: 3, Usage: "interleaved repetitions of every point (its median, min and max are reported)"},
		&cli.StringFlag{Name: "scale-partitions", Usage: "scale: server partition counts, e.g. 1,2,4,8 (default: half the cores, at most 8)"},
		&cli.IntFlag{Name: "scale-procs", Usage: "scale: load processes N, and the one-process shape's GOMAXPROCS (default: half the cores, at most 8)"},
		&cli.StringFlag{Name: "scale-loads", Value: "8x1,1x8", Usage: "scale: connections per load process x window, e.g. 8x1,1x8"},
		&cli.StringFlag{Name: "client-mode", Value: "auto", Usage: "callers, scale: the load's client mode (auto, rfp, reply, hybrid)"},
		&cli.StringFlag{Name: "compare-systems", Usage: "compare, comparetcp: only these systems (comma-separated names, e.g. jakiro-defaults,memcached,noop)"},
		&cli.StringFlag{Name: "ycsb-threads", Usage: "compare, comparetcp, ycsbthreads: go-ycsb thread counts, e.g. 64,1024 (default: the experiment's)"},
		&cli.IntFlag{Name: "ext-threads", Value: 1, Usage: "compare, comparetcp: memcached worker threads (-t)"},
		&cli.StringFlag{Name: "fabric", Usage: "onebyone, join: fabrics, comma-separated: shm, tcp (default: onebyone shm,tcp; join shm)"},
		&cli.IntFlag{Name: "join-procs", Value: 256, Usage: "join: processes in the burst, each joining once"},
		&cli.BoolFlag{Name: "join-sessions", Usage: "join: the burst (one spawner's children) and each server in a session of its own, as services run under autogroups or cgroups; off: every process a peer in the CPU's fair share, as the issue measured"},
		&cli.DurationFlag{Name: "quiet-wait", Value: 45 * time.Second, Usage: "before each experiment, wait up to this long for the machine to be 80% idle"},
	}
}

func newEnv(c *cli.Context) (*env, error) {
	parts, err := parseInts(c.String("scale-partitions"))
	if err != nil {
		return nil, fmt.Errorf("--scale-partitions: %w", err)
	}
	loads, err := parseLoads(c.String("scale-loads"))
	if err != nil {
		return nil, fmt.Errorf("--scale-loads: %w", err)
	}
	threads, err := parseInts(c.String("ycsb-threads"))
	if err != nil {
		return nil, fmt.Errorf("--ycsb-threads: %w", err)
	}
	mode, err := client.ParseMode(c.String("client-mode"))
	if err != nil {
		return nil, err
	}
	fabrics, err := parseFabrics(c.String("fabric"))
	if err != nil {
		return nil, fmt.Errorf("--fabric: %w", err)
	}
	if c.Int("join-procs") < 1 {
		return nil, fmt.Errorf("--join-procs %d: want at least 1", c.Int("join-procs"))
	}
	var systems []string
	if s := c.String("compare-systems"); s != "" {
		systems = strings.Split(s, ",")
	}
	return &env{Fabrics: fabrics, JoinProcs: c.Int("join-procs"), JoinSessions: c.Bool("join-sessions"), ScaleParts: parts, ScaleProcs: c.Int("scale-procs"), ScaleLoads: loads,
		ClientMode: mode, CompareSystems: systems, YCSBThreads: threads, ExtThreads: c.Int("ext-threads"), Ctx: c.Context, Out: c.String("out"), Addr: c.String("addr"), Duration: c.Duration("duration"),
		Warmup: c.Duration("warmup"), Keys: c.Int("keys"), Partitions: c.Int("partitions"), Quick: c.Bool("quick"), Reps: max(1, c.Int("reps")),
		QuietWait: c.Duration("quiet-wait"), M: getMachineInfo(), Log: os.Stdout}, nil
}

// parseFabrics reads --fabric: "" is nil (each experiment's own), else
// distinct names of shm and tcp, comma-separated.
func parseFabrics(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f != "shm" && f != "tcp" {
			return nil, fmt.Errorf("fabric %q: want shm or tcp", f)
		}
		if slices.Contains(out, f) {
			return nil, fmt.Errorf("fabric %q given twice", f)
		}
		out = append(out, f)
	}
	return out, nil
}

// fabricsOr is --fabric, or def where it was not given.
func (e *env) fabricsOr(def ...string) []string {
	if len(e.Fabrics) > 0 {
		return e.Fabrics
	}
	return def
}

func (e *env) logf(format string, args ...any) { fmt.Fprintf(e.Log, format+"\n", args...) }

// reps is how many repetitions each point takes (at least one).
func (e *env) reps() int { return max(1, e.Reps) }

// server starts a server for an experiment (or uses --addr), preloads ks
// and calls f with its address.
func (e *env) server(o serverOpts, ks *keySet, f func(addr string) error) error {
	return e.serverProc(o, ks, func(addr string, _ int) error { return f(addr) })
}

// serverProc is server, also passing the server's process ID (0 when
// --addr names a server this run did not start).
func (e *env) serverProc(o serverOpts, ks *keySet, f func(addr string, pid int) error) error {
	addr, pid := e.Addr, 0
	if o.Partitions == 0 && !o.Defaults {
		o.Partitions = e.Partitions
	}
	o = o.withDefaults()
	if addr == "" {
		p, err := startServer(o)
		if err != nil {
			return err
		}
		defer p.Stop()
		addr, pid = p.Addr, p.cmd.Process.Pid
	}
	if ks != nil {
		t := time.Now()
		if err := preload(e.Ctx, addr, ks); err != nil {
			return fmt.Errorf("preload: %w", err)
		}
		e.logf("  preloaded %d items (%s values) in %v", len(ks.keys), fmtMean(ks), time.Since(t).Round(time.Millisecond))
	}
	return f(addr, pid)
}

func fmtMean(ks *keySet) string { return fmt.Sprintf("mean %.1f B", ks.meanSize()) }

// settings are the CSV header lines every loadgen experiment shares.
func (e *env) settings(o serverOpts, extra ...string) []string {
	if !o.Defaults {
		o.Partitions = max(o.Partitions, e.Partitions)
	}
	o = o.withDefaults()
	s := []string{e.idleSetting(), "server: " + o.String(), fmt.Sprintf("fabric: %s", fabricOf(e.Addr)),
		fmt.Sprintf("keys: %d x 16 B", e.Keys), fmt.Sprintf("per point: warmup %v, measured %v", e.Warmup, e.Duration)}
	return append(s, extra...)
}

func fabricOf(addr string) string {
	if addr == "" {
		return "shm (server in a separate process)"
	}
	return addr
}

// done writes t and reports the files.
func (e *env) done(t *table, pngs ...string) error {
	path, err := t.write(e.Out, e.M)
	if err != nil {
		return err
	}
	e.logf("  wrote %s", path)
	for _, p := range pngs {
		e.logf("  wrote %s", p)
	}
	return nil
}

// png is the path of a figure; it makes the directory so plots can be
// saved before the CSV.
func (e *env) png(name string) string {
	os.MkdirAll(e.Out, 0o755)
	return filepath.Join(e.Out, name+".png")
}

package main

import (
	"fmt"
	"runtime"
	"time"

	"github.com/urfave/cli/v2"
)

// experiment is one of the paper's figures (or a comparison): it measures,
// then writes <Name>.csv and <Name>.png into env.Out.
type experiment struct {
	Name  string
	Usage string
	Run   func(e *env) error
}

// userProcs are the experiments whose clients run as their users' do (go-ycsb,
// a program's one client): at the machine's GOMAXPROCS, unless
// --client-procs says otherwise.
var userProcs = map[string]bool{"compare": true, "comparetcp": true, "ycsbthreads": true, "onebyone": true, "join": true}

// experiments in the order figures runs them.
var experiments = []experiment{
	{"fabric", "raw one-sided READ vs WRITE ops/s by initiator count (paper Fig. 1)", runFabric},
	{"clients", "throughput vs client connections (1 to 1,024), rfp vs reply vs hybrid (Fig. 4)", runClients},
	{"fairness", "8 window-1 clients beside a flooding client (window 32): their share of the server", runFairness},
	{"idle", "one active client beside 0 to 10,000 idle connections, shm and tcp", runIdle},
	{"latency", "latency CDF at peak and at 50% load (Fig. 5)", runLatency},
	{"getratio", "throughput at 5/50/95/100% GET (Fig. 6)", runGetRatio},
	{"valuesize", "throughput for values of 32 B to 1 KiB (Fig. 7)", runValueSize},
	{"rfs", "throughput by remote fetch size, including auto (Fig. 8)", runRFS},
	{"skew", "zipf .99 vs uniform keys by GET ratio (Fig. 9)", runSkew},
	{"mixed", "Weibo-like sizes 1-899 B, mean 43 B: throughput and round trips per op (Fig. 10)", runMixed},
	{"window", "fabric operations per GET and throughput against the window (1 to 64), rfp and reply, on shm and tcp", runWindow},
	{"compare", "go-ycsb 95/5 zipfian at 4 and 64 threads: Jakiro at defaults and tuned vs Redis, memcached and a no-op database", runCompare},
	{"comparetcp", "go-ycsb 95/5 zipfian at 1 and 4 threads over loopback tcp: Jakiro in each mode vs Redis, memcached and a no-op database", runCompareTCP},
	{"door", "go-ycsb's memcached driver against jakiro server --memcached and memcached -t N (N = partitions), 1 and 2", runDoor},
	{"busyhost", "go-ycsb 95/5 zipfian at 1 and 4 threads, Jakiro (shm, tcp) and memcached, on a quiet host and beside CPU hogs (one per core but one)", runBusyHost},
	{"ycsbthreads", "go-ycsb read-only at 8 to 1,024 threads against Jakiro at its defaults", runYCSBThreads},
	{"callers", "one process, Get from 64 and 1,024 goroutines (own connections, one shared Client) vs one goroutine's batches of 8, GOMAXPROCS 1 and 2: ops/s and client and server CPU per op", runCallers},
	{"scale", "server partitions vs N load processes x C connections x window W, and the same load from one process at GOMAXPROCS N: ops/s, client and server CPU per op", runScale},
	{"servers", "one client over 1, 2 and 3 servers on loopback tcp (median of 3 interleaved rounds, min-max)", runServers},
	{"onebyone", "one GET at a time against jakiro server at its defaults, each client mode, on shm and tcp: p50 and p99 beside the echo floor (a 32 B request through a process that copies it back)", runOneByOne},
	{"joinpool", "an idle shm server's RSS, mappings, descriptors and CPU without a join pool, at the default (8) and at 64", runJoinPool},
	{"join", "a burst of --join-procs processes each Dial + one GET + Close at once vs memcached connect + get + close: join p50/p99, time to all answered, server CPU per join; an established client's GET rate alone and during the burst", runJoin},
}

// startProcs is the GOMAXPROCS this process started with: what go-ycsb
// runs at on this machine.
var startProcs = runtime.GOMAXPROCS(0)

// clientProcs is the load generator's GOMAXPROCS for x: --client-procs
// where given; else the machine's for userProcs, and the flag's default
// (1) for the rest.
func clientProcs(c *cli.Context, x experiment) int {
	if userProcs[x.Name] && !c.IsSet("client-procs") {
		return startProcs
	}
	return c.Int("client-procs")
}

func experimentCommand(x experiment) *cli.Command {
	return &cli.Command{
		Name:  x.Name,
		Usage: x.Usage,
		Flags: commonFlags(),
		Action: func(c *cli.Context) error {
			e, err := newEnv(c)
			if err != nil {
				return err
			}
			runtime.GOMAXPROCS(clientProcs(c, x))
			t := time.Now()
			e.logf("== %s: %s", x.Name, x.Usage)
			e.waitQuiet(e.QuietWait)
			err = x.Run(e)
			e.logf("== %s done in %v", x.Name, time.Since(t).Round(100*time.Millisecond))
			return err
		},
	}
}

func figuresCommand() *cli.Command {
	return &cli.Command{
		Name:  "figures",
		Usage: "run every experiment, regenerating the CSVs and PNGs in --out",
		Flags: commonFlags(),
		Action: func(c *cli.Context) error {
			e, err := newEnv(c)
			if err != nil {
				return err
			}
			start := time.Now()
			var failed []string
			for i, x := range experiments {
				t := time.Now()
				e.logf("== [%d/%d] %s: %s", i+1, len(experiments), x.Name, x.Usage)
				runtime.GOMAXPROCS(clientProcs(c, x))
				e.waitQuiet(e.QuietWait)
				if err := x.Run(e); err != nil {
					// One failing experiment (say, no redis-server) must
					// not cost the others.
					e.logf("!! %s failed: %v", x.Name, err)
					failed = append(failed, x.Name)
				}
				e.logf("== %s done in %v (total %v)", x.Name, time.Since(t).Round(100*time.Millisecond),
					time.Since(start).Round(time.Second))
				if c.Context.Err() != nil {
					return c.Context.Err()
				}
			}
			if len(failed) > 0 {
				return fmt.Errorf("failed: %v", failed)
			}
			return nil
		},
	}
}

package main

import (
	"fmt"
	"os"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/fabric/fabricbench"
)

// demo: one server on shm, the paper's workload (16 B keys, 32 B values,
// 95% GET, uniform), each mode measured twice: pipelined for throughput,
// then one synchronous request at a time for latency.
func demoCommand() *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "RFP vs server-reply (and hybrid) on shm: throughput, latency, round trips per op",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Usage: "use this running server instead of starting one"},
			&cli.DurationFlag{Name: "duration", Value: 2 * time.Second, Usage: "measured time per mode and phase"},
			&cli.IntFlag{Name: "keys", Value: 100000, Usage: "items preloaded"},
			&cli.IntFlag{Name: "window", Value: 8, Usage: "requests in flight per client in the throughput phase"},
			&cli.DurationFlag{Name: "fetch-delay", Value: -1, Usage: "fixed wait before the first fetch READ (negative: adaptive)"},
			&cli.DurationFlag{Name: "server-spin", Usage: "server partitions busy-poll this long when idle before dozing (0: server default)"},
			&cli.IntFlag{Name: "client-procs", Value: 1, Usage: "GOMAXPROCS of the load generator (the server process has its own)"},
		},
		Action: func(c *cli.Context) error {
			runtime.GOMAXPROCS(c.Int("client-procs"))
			e := &env{Ctx: c.Context, Addr: c.String("addr"), Duration: c.Duration("duration"),
				Warmup: 300 * time.Millisecond, Keys: c.Int("keys"), Partitions: 1, M: getMachineInfo(), Log: os.Stdout}
			return runDemo(e, c.Int("window"), c.Duration("fetch-delay"), serverOpts{Partitions: 1, SpinIdle: c.Duration("server-spin")})
		},
	}
}

type demoRow struct {
	mode       client.Mode
	tput, sync loadResult
}

func runDemo(e *env, window int, fetchDelay time.Duration, so serverOpts) error {
	e.logf("jakiro demo on %s (%d cores, %s, load average %s)", e.M.Host, e.M.Cores, e.M.CPU, loadAvg())
	e.logf("workload: %d items, 16 B keys, 32 B values, 95%% GET, uniform; server: 1 partition, own process", e.Keys)
	ks := newKeySet(e.Keys, sizeDist{Fixed: 32})
	var rows []demoRow
	err := e.server(so, ks, func(addr string) error {
		for _, m := range []client.Mode{client.ModeRFP, client.ModeReply, client.ModeHybrid} {
			spec := loadSpec{Addr: addr, Mode: m, Clients: 1, Window: window, GetRatio: 0.95, Keys: e.Keys,
				Warmup: e.Warmup, Duration: e.Duration, FetchDelay: fetchDelay, FixDelay: fetchDelay >= 0}
			e.logf("  %-6s throughput: 1 client, window %d, %v ...", m, window, e.Duration)
			t, err := runLoad(e.Ctx, spec, ks)
			if err != nil {
				return err
			}
			spec.Window = 1
			e.logf("  %-6s latency: 1 client, 1 request at a time, %v ...", m, e.Duration)
			s, err := runLoad(e.Ctx, spec, ks)
			if err != nil {
				return err
			}
			rows = append(rows, demoRow{m, t, s})
		}
		return nil
	})
	if err != nil {
		return err
	}
	e.logf("  echo floor: 1 request at a time, %v ...", e.Duration)
	echo, echoErr := e.demoEcho()
	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "mode\tMops (window %d)\ttrips/op\tretries/op\t|\tMops (sync)\tp50 µs\tp99 µs\tp99.9 µs\ttrips/op\tretries/op\treplied\t\n", window)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t|\t%.3f\t%.2f\t%.2f\t%.2f\t%.3f\t%.3f\t%.0f%%\t\n", r.mode,
			r.tput.Mops, r.tput.RoundTrips(), r.tput.Retries(),
			r.sync.Mops, r.sync.P(50), r.sync.P(99), r.sync.P(99.9), r.sync.RoundTrips(), r.sync.Retries(),
			100*float64(r.sync.Counters.Replied)/float64(max(r.sync.Counters.Ops, 1)))
	}
	tw.Flush()
	if len(rows) == 3 && rows[1].tput.Mops > 0 {
		fmt.Printf("\nrfp/reply throughput: %.2fx pipelined, %.2fx synchronous\n",
			rows[0].tput.Mops/rows[1].tput.Mops, rows[0].sync.Mops/max(rows[1].sync.Mops, 1e-9))
	}
	if echoErr != nil {
		fmt.Printf("echo floor: not measured (%v)\n", echoErr)
	} else if len(rows) > 0 && echo.P50 > 0 {
		fmt.Printf("echo floor (a 32 B request through a process that copies it back, nothing of Jakiro): p50 %.2f µs, p99 %.2f µs; rfp (the default on shm) p50 = %.2fx the floor\n",
			echo.P50, echo.P99, rows[0].sync.P(50)/echo.P50)
	}
	fmt.Println("trips/op = fabric operations (request WRITEs + fetch READs) per request; retries/op = fetch READs that found no result yet.")
	fmt.Println("On shm both sides are CPUs copying shared memory, so the NIC asymmetry RFP exploits is absent: see results/README.md.")
	return nil
}

// demoEcho measures the echo floor on shm for as long as a mode's
// latency (fabricbench's echo target, as onebyone's).
func (e *env) demoEcho() (oneByOneSample, error) {
	addr, cleanup, err := fabricAddr("shm")
	if err != nil {
		return oneByOneSample{}, err
	}
	defer cleanup()
	t, err := fabricbench.StartEcho(addr)
	if err != nil {
		return oneByOneSample{}, err
	}
	defer t.Stop()
	return e.echoPoint(addr)
}

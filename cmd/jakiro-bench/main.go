// Command jakiro-bench measures Jakiro: the RFP paper's experiments, each
// writing a CSV and a PNG, go-ycsb workloads in process, and a comparison
// with Redis and memcached.
//
//	jakiro-bench demo                         # rfp vs reply vs hybrid, a table
//	jakiro-bench figures --out results        # every experiment below
//	jakiro-bench clients|latency|getratio|valuesize|rfs|skew|mixed|fabric|compare
//	jakiro-bench ycsb load|run jakiro -P workloads/paper-uniform -p jakiro.mode=reply
//
// Servers run as separate processes (this binary re-executed) unless --addr
// names one; every run is bounded in time.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/jakiro-kv/jakiro/fabric/fabricbench"
)

func main() {
	fabricbench.ServeChildIfRequested()
	serveChildIfRequested()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := newApp().RunContext(ctx, os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "jakiro-bench:", err)
		os.Exit(1)
	}
}

func newApp() *cli.App {
	cmds := []*cli.Command{demoCommand(), figuresCommand(), ycsbCommand()}
	for _, x := range experiments {
		cmds = append(cmds, experimentCommand(x))
	}
	return &cli.App{
		Name:     "jakiro-bench",
		Usage:    "benchmarks for Jakiro: the RFP paper's figures, go-ycsb, Redis and memcached",
		Commands: cmds,
		Flags:    []cli.Flag{cpuProfileFlag},
		Before:   startProfile,
		After:    stopProfile,
	}
}

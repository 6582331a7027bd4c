// Command jakiro-bench measures Jakiro: the RFP paper's experiments, each
// writing a CSV and a PNG, go-ycsb workloads in process, and a comparison
// with Redis and memcached.
//
//	jakiro-bench demo                         # rfp vs reply vs hybrid, a table
//	jakiro-bench figures --out results        # every experiment below
//	jakiro-bench readme                       # README.md's headline table from results/*.csv
//	jakiro-bench clients|latency|getratio|valuesize|rfs|skew|mixed|fabric|compare|servers
//	jakiro-bench ycsb load|run jakiro -P workloads/paper-uniform -p jakiro.mode=reply
//	jakiro-bench stress --addr shm:///tmp/jakiro.sock --duration 5s   # exit 1 on a torn or stale value
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

	"github.com/jakiro-kv/jakiro/cmd/internal/version"
	"github.com/jakiro-kv/jakiro/fabric/fabricbench"
	_ "github.com/jakiro-kv/jakiro/fabric/providers" // shm://, tcp://, and rdma:// with -tags rdma
	"github.com/jakiro-kv/jakiro/internal/fdlimit"
)

// maxFiles is the open-file limit the benchmarks need: 10,000 idle shm
// connections cost the client three descriptors each and the server two.
const maxFiles = 1 << 16

func main() {
	if _, err := fdlimit.Raise(maxFiles); err != nil {
		fmt.Fprintln(os.Stderr, "jakiro-bench: raising the open-file limit:", err)
	}
	fabricbench.ServeChildIfRequested()
	serveChildIfRequested()
	stressChildIfRequested()
	loadChildIfRequested()
	joinChildIfRequested()
	joinSpawnerIfRequested()
	holdIdleIfRequested()
	hogIfRequested()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := newApp().RunContext(ctx, os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "jakiro-bench:", err)
		os.Exit(1)
	}
}

func newApp() *cli.App {
	cmds := []*cli.Command{demoCommand(), figuresCommand(), readmeCommand(), ycsbCommand(), stressCommand()}
	for _, x := range experiments {
		cmds = append(cmds, experimentCommand(x))
	}
	app := &cli.App{
		Name:     "jakiro-bench",
		Usage:    "benchmarks for Jakiro: the RFP paper's figures, go-ycsb, Redis and memcached",
		Commands: cmds,
		Flags:    []cli.Flag{cpuProfileFlag, traceFlag},
		Before:   startProfile,
		After:    stopProfile,
	}
	version.SetFlag(app)
	return app
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/urfave/cli/v2"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/server"
)

func sizeFlag(name, value, usage string) *cli.StringFlag {
	return &cli.StringFlag{Name: name, Value: value, Usage: usage, EnvVars: []string{envName(name)}}
}

func envName(flag string) string {
	b := []byte("JAKIRO_")
	for _, c := range flag {
		switch {
		case c == '-':
			b = append(b, '_')
		case c >= 'a' && c <= 'z':
			b = append(b, byte(c-'a'+'A'))
		default:
			b = append(b, byte(c))
		}
	}
	return string(b)
}

func size(c *cli.Context, name string) (int64, error) {
	n, err := server.ParseSize(c.String(name))
	if err != nil {
		return 0, fmt.Errorf("--%s: %w", name, err)
	}
	return n, nil
}

func serverCommand() *cli.Command {
	return &cli.Command{
		Name:  "server",
		Usage: "run a Jakiro server",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "shm:///tmp/jakiro.sock", Usage: "fabric URL: shm:///path, tcp://host:port or rdma://ip:port", EnvVars: []string{"JAKIRO_LISTEN"}},
			&cli.IntFlag{Name: "partitions", Value: 2, Usage: "EREW partitions (one goroutine each)", EnvVars: []string{"JAKIRO_PARTITIONS"}},
			sizeFlag("memory", "1GiB", "memory for items, split among partitions"),
			sizeFlag("max-value", "64KiB", "largest value; ring slots are sized for it"),
			&cli.IntFlag{Name: "slots", Value: 8, Usage: "request/response slots per client per partition", EnvVars: []string{"JAKIRO_SLOTS"}},
			&cli.BoolFlag{Name: "store", Usage: "store mode: never evict, PUT fails when full", EnvVars: []string{"JAKIRO_STORE"}},
			&cli.BoolFlag{Name: "lru", Usage: "re-append hits near the eviction point (approximate LRU)", EnvVars: []string{"JAKIRO_LRU"}},
			&cli.StringFlag{Name: "idle", Value: "bell", Usage: "idle partitions: bell (block on a doorbell clients ring: ~0 CPU) or poll (every --doze: tighter wake-up, some CPU)", EnvVars: []string{"JAKIRO_IDLE"}},
			&cli.DurationFlag{Name: "doze", Value: 20 * time.Microsecond, Usage: "idle poll interval (--idle poll, and fabrics without doorbells)", EnvVars: []string{"JAKIRO_DOZE"}},
			&cli.DurationFlag{Name: "spin", Value: 200 * time.Microsecond, Usage: "busy-poll this long after the last request before dozing", EnvVars: []string{"JAKIRO_SPIN"}},
			&cli.StringFlag{Name: "rdma-dev", Usage: "RDMA device (rdma:// only)", EnvVars: []string{"JAKIRO_RDMA_DEV"}},
			&cli.StringFlag{Name: "metrics", Usage: "serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9464)", EnvVars: []string{"JAKIRO_METRICS"}},
			&cli.BoolFlag{Name: "pprof", Usage: "also serve Go's profiler at http://ADDR/debug/pprof/ on the --metrics address", EnvVars: []string{"JAKIRO_PPROF"}},
			&cli.BoolFlag{Name: "quiet", Usage: "no connect/disconnect log", EnvVars: []string{"JAKIRO_QUIET"}},
		},
		Action: runServer,
	}
}

func runServer(c *cli.Context) error {
	mem, err := size(c, "memory")
	if err != nil {
		return cli.Exit(err, exitError)
	}
	maxValue, err := size(c, "max-value")
	if err != nil {
		return cli.Exit(err, exitError)
	}
	idle := c.String("idle")
	if idle != "bell" && idle != "poll" {
		return cli.Exit(fmt.Errorf("--idle %q: want bell or poll", idle), exitError)
	}
	if c.Bool("pprof") && c.String("metrics") == "" {
		return cli.Exit(errors.New("--pprof needs --metrics ADDR to serve on"), exitError)
	}
	logger := log.New(os.Stderr, "", log.LstdFlags|log.Lmicroseconds)
	cfg := server.Config{
		Listen: c.String("listen"), Partitions: c.Int("partitions"), Memory: mem, MaxValue: int(maxValue),
		Slots: c.Int("slots"), Store: c.Bool("store"), ApproxLRU: c.Bool("lru"),
		DozeSleep: c.Duration("doze"), SpinIdle: c.Duration("spin"), IdlePoll: idle == "poll",
		Fabric: fabric.Options{Device: c.String("rdma-dev")},
	}
	if !c.Bool("quiet") {
		cfg.Logf = logger.Printf
	}
	srv, err := server.New(cfg)
	if err != nil {
		return cli.Exit(err, exitError)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if addr := c.String("metrics"); addr != "" {
		reg := prometheus.NewRegistry()
		reg.MustRegister(srv.Collector(), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		if c.Bool("pprof") {
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		}
		hs := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := hs.ListenAndServe(); err != nil && err != http.ErrServerClosed {
				logger.Printf("jakiro: metrics: %v", err)
			}
		}()
		defer hs.Close()
		logger.Printf("jakiro: metrics on http://%s/metrics", addr)
	}
	logger.Printf("jakiro: serving on %s (%d partitions, %s memory)", srv.Addr(), cfg.Partitions, c.String("memory"))
	err = srv.Serve(ctx)
	srv.Close()
	logger.Printf("jakiro: stopped")
	if err != nil {
		return cli.Exit(err, exitError)
	}
	return nil
}

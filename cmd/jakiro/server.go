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
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/urfave/cli/v2"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/internal/fdlimit"
	"github.com/jakiro-kv/jakiro/rfp"
	"github.com/jakiro-kv/jakiro/server"
	"github.com/jakiro-kv/jakiro/server/memcache"
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
			&cli.IntFlag{Name: "partitions", Value: 0, DefaultText: "half the cores, at least 1", Usage: "EREW partitions, one goroutine each (busy-polling a core while it has work); a server with cores to itself: one per core", EnvVars: []string{"JAKIRO_PARTITIONS"}},
			&cli.IntFlag{Name: "max-clients", Value: server.DefaultMaxClients, Usage: "clients connected at once; more are refused (they get a clear error)", EnvVars: []string{"JAKIRO_MAX_CLIENTS"}},
			sizeFlag("memory", "1GiB", "memory for items, split among partitions"),
			sizeFlag("max-value", "64KiB", "largest value (longer than a ring record, it travels in pieces)"),
			sizeFlag("item-size", "48B", "expected key+value bytes per item: sizes the index (~18 B per expected item), the rest of --memory is log"),
			&cli.IntFlag{Name: "slots", Value: 8, Usage: "requests in flight per client per partition (the deepest window)", EnvVars: []string{"JAKIRO_SLOTS"}},
			sizeFlag("request-ring", "16KiB", "each client's request ring per partition (bytes; records of several requests go out in one WRITE)"),
			sizeFlag("response-ring", "32KiB", "each client's response ring per partition (bytes; one READ fetches the responses ready)"),
			&cli.BoolFlag{Name: "store", Usage: "store mode: never evict, PUT fails when full", EnvVars: []string{"JAKIRO_STORE"}},
			&cli.BoolFlag{Name: "lru", Usage: "re-append hits near the eviction point (approximate LRU)", EnvVars: []string{"JAKIRO_LRU"}},
			&cli.StringFlag{Name: "idle", Value: "bell", Usage: "idle partitions: bell (block on a doorbell clients ring: ~0 CPU) or poll (every --doze: tighter wake-up, some CPU)", EnvVars: []string{"JAKIRO_IDLE"}},
			&cli.DurationFlag{Name: "doze", Value: 20 * time.Microsecond, Usage: "idle poll interval (--idle poll, and fabrics without doorbells)", EnvVars: []string{"JAKIRO_DOZE"}},
			&cli.DurationFlag{Name: "spin", Value: server.DefaultSpinIdle, Usage: "keep polling at least this long after the last request (yielding the core to other processes past 10µs) before blocking on the doorbell, up to 10x while clients ring soon after it blocks; at least the default, the doorbell contract's minimum (on tcp:// 800µs)", EnvVars: []string{"JAKIRO_SPIN"}},
			&cli.IntFlag{Name: "join-pool", Value: server.DefaultJoinPool, Usage: "connections prepared before anyone dials, so that a new client's join does not wait for them (shm: two sealed memfds each, the server's and the one it lends the client, a page and a descriptor each while they wait; rdma: an event channel, PD, CQ and QP each); 0: none", EnvVars: []string{"JAKIRO_JOIN_POOL"}},
			&cli.DurationFlag{Name: "reply-timeout", Value: server.DefaultReplyTimeout, Usage: "disconnect a client whose connection takes no reply WRITE for this long (reply and hybrid modes)", EnvVars: []string{"JAKIRO_REPLY_TIMEOUT"}},
			&cli.StringFlag{Name: "rdma-dev", Usage: "RDMA device (rdma:// only)", EnvVars: []string{"JAKIRO_RDMA_DEV"}},
			&cli.StringFlag{Name: "metrics", Usage: "serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9464)", EnvVars: []string{"JAKIRO_METRICS"}},
			&cli.BoolFlag{Name: "pprof", Usage: "also serve Go's profiler at http://ADDR/debug/pprof/ on the --metrics address", EnvVars: []string{"JAKIRO_PPROF"}},
			&cli.BoolFlag{Name: "quiet", Usage: "no connect/disconnect log", EnvVars: []string{"JAKIRO_QUIET"}},
			&cli.StringFlag{Name: "auth-token", Usage: "token every client must present (clients: JAKIRO_AUTH_TOKEN); required to listen beyond loopback", EnvVars: []string{rfp.AuthTokenEnv}},
			&cli.StringFlag{Name: "auth-token-file", Usage: "read --auth-token from this file (keeps it out of ps and the environment)", EnvVars: []string{"JAKIRO_AUTH_TOKEN_FILE"}},
			&cli.BoolFlag{Name: "insecure", Usage: "serve a non-loopback address without --auth-token (every host that can reach it must be trusted)", EnvVars: []string{"JAKIRO_INSECURE"}},
			&cli.StringFlag{Name: "memcached", Usage: "also serve the memcached protocol (ascii and binary) on this TCP address, e.g. 127.0.0.1:11211, on the same partitions and memory (off by default); beyond loopback it needs --auth-token (binary SASL PLAIN) or --insecure", EnvVars: []string{"JAKIRO_MEMCACHED"}},
			sizeFlag("memcached-max-value", "1MiB", "largest value through the memcached door (memcached's item size, -I); the store takes the larger of it and --max-value, RFP clients keep --max-value (a longer value written through the door answers them 'too large')"),
			&cli.DurationFlag{Name: "memcached-idle-timeout", Usage: "close a memcached connection that sends nothing for this long (0: never, as memcached: its clients keep pooled connections open; set it where untrusted clients could hold all 4096 door connections)", EnvVars: []string{"JAKIRO_MEMCACHED_IDLE_TIMEOUT"}},
			&cli.DurationFlag{Name: "memcached-spin", Value: memcache.DefaultSpin, Usage: "after answering, a memcached connection polls its socket this long before it sleeps (0: never): a request within it is read without a thread wake-up; at most 16 connections at once, none while RFP clients are connected", EnvVars: []string{"JAKIRO_MEMCACHED_SPIN"}},
			&cli.DurationFlag{Name: "send-timeout", Value: fabric.DefaultSendTimeout, Usage: "disconnect a client that takes none of the server's bytes this long (tcp)", EnvVars: []string{"JAKIRO_SEND_TIMEOUT"}},
		},
		Action: runServer,
	}
}

// doorSpin is memcache.Config.Spin for --memcached-spin: 0 there is never.
func doorSpin(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// authToken is --auth-token or the content of --auth-token-file (one of
// them), trailing newline dropped.
func authToken(c *cli.Context) (string, error) {
	token, file := c.String("auth-token"), c.String("auth-token-file")
	if file == "" {
		return token, nil
	}
	if token != "" {
		return "", errors.New("--auth-token and --auth-token-file both given: use one")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--auth-token-file: %w", err)
	}
	token = strings.TrimRight(string(b), "\r\n")
	if token == "" {
		return "", fmt.Errorf("--auth-token-file %s is empty", file)
	}
	return token, nil
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
	reqRing, err := size(c, "request-ring")
	if err != nil {
		return cli.Exit(err, exitError)
	}
	respRing, err := size(c, "response-ring")
	if err != nil {
		return cli.Exit(err, exitError)
	}
	itemSize, err := size(c, "item-size")
	if err != nil {
		return cli.Exit(err, exitError)
	}
	if itemSize < 1 || itemSize > 1<<30 {
		return cli.Exit(fmt.Errorf("--item-size %s: want 1B..1GiB", c.String("item-size")), exitError)
	}
	idle := c.String("idle")
	if idle != "bell" && idle != "poll" {
		return cli.Exit(fmt.Errorf("--idle %q: want bell or poll", idle), exitError)
	}
	if c.Bool("pprof") && c.String("metrics") == "" {
		return cli.Exit(errors.New("--pprof needs --metrics ADDR to serve on"), exitError)
	}
	token, err := authToken(c)
	if err != nil {
		return cli.Exit(err, exitError)
	}
	logger := log.New(os.Stderr, "", log.LstdFlags|log.Lmicroseconds)
	cfg := server.Config{
		Listen: c.String("listen"), Partitions: c.Int("partitions"), Memory: mem, MaxValue: int(maxValue),
		Slots: c.Int("slots"), ReqRing: int(reqRing), RespRing: int(respRing),
		MaxClients: c.Int("max-clients"), ReplyTimeout: c.Duration("reply-timeout"), JoinPool: joinPool(c.Int("join-pool")),
		Store: c.Bool("store"), ApproxLRU: c.Bool("lru"), ItemSize: int(itemSize),
		DozeSleep: c.Duration("doze"), SpinIdle: c.Duration("spin"), IdlePoll: idle == "poll",
		Fabric:    fabric.Options{Device: c.String("rdma-dev"), SendTimeout: c.Duration("send-timeout")},
		AuthToken: token, Insecure: c.Bool("insecure"),
		// With the door and no RFP client, one P per partition, as
		// memcached -t N has N workers (server/procs.go).
		DoorProcs: c.String("memcached") != "",
		// A P beyond the partitions and tcp's pollers (server/procs.go).
		SpareProcs: true,
		// The door's mg l reports each item's last access.
		AccessTimes: c.String("memcached") != "",
	}
	if c.String("memcached") != "" {
		doorMax, err := size(c, "memcached-max-value")
		if err != nil {
			return cli.Exit(err, exitError)
		}
		cfg.DoorMaxValue = int(doorMax)
	}
	if !c.Bool("quiet") {
		cfg.Logf = logger.Printf
	}
	if c.Int("partitions") < 0 || c.Int("max-clients") < 1 {
		return cli.Exit(errors.New("--partitions must be >= 0 (0: the default) and --max-clients >= 1"), exitError)
	}
	// A shm client costs two descriptors (socket, memfd), a tcp one one.
	if n, err := fdlimit.Raise(uint64(2*cfg.MaxClients + 256)); err != nil || n < uint64(2*cfg.MaxClients+256) {
		logger.Printf("jakiro: open-file limit %d is low for --max-clients %d (%v): raise ulimit -n", n, cfg.MaxClients, err)
	}
	if err := checkAddr(cfg.Listen); err != nil {
		return cli.Exit(err, exitError)
	}
	if path := staleSocket(cfg.Listen); path != "" {
		logger.Printf("jakiro: removing %s: a socket no server listens on (left by one that stopped)", path)
	}
	srv, err := server.New(cfg)
	if err != nil {
		return cli.Exit(explainListen(cfg.Listen, err), exitError)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var reg *prometheus.Registry
	if addr := c.String("metrics"); addr != "" {
		reg = prometheus.NewRegistry()
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
	idx, lg, _ := cfg.MemorySplit()
	logger.Printf("jakiro: serving on %s (%d partitions, %s memory: index %s for %s items, log %s; at most %d clients)", srv.Addr(), srv.Partitions(),
		c.String("memory"), server.FormatSize(idx), c.String("item-size"), server.FormatSize(lg), cfg.MaxClients)
	var door *memcache.Door
	if addr := c.String("memcached"); addr != "" {
		door, err = memcache.Listen(memcache.Config{Addr: addr, AuthToken: token, Insecure: c.Bool("insecure"), Logf: cfg.Logf,
			IdleTimeout: c.Duration("memcached-idle-timeout"), Spin: doorSpin(c.Duration("memcached-spin"))}, srv.Door())
		if err != nil {
			srv.Close()
			return cli.Exit(err, exitError)
		}
		if reg != nil {
			reg.MustRegister(door.Collector())
		}
		go door.Serve(ctx)
		logger.Printf("jakiro: memcached protocol on %s", door.Addr())
	}
	err = srv.Serve(ctx)
	if door != nil {
		door.Close() // its connections end before the partitions stop
	}
	srv.Close()
	logger.Printf("jakiro: stopped")
	if err != nil {
		return cli.Exit(err, exitError)
	}
	return nil
}

// joinPool maps --join-pool (0: none) to server.Config.JoinPool (0: the
// default, negative: none).
func joinPool(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/server"
	"github.com/jakiro-kv/jakiro/server/memcache"
)

// The Jakiro server under test runs in its own process: this binary
// re-executed with envServe holding its configuration. Separate processes
// keep the server's busy-polling partitions off the load generator's
// scheduler, as on the paper's separate machines.
const envServe = "JAKIRO_BENCH_SERVE"

// serverOpts is the child's configuration (JSON in envServe).
type serverOpts struct {
	Listen     string `json:"listen"`
	Partitions int    `json:"partitions"`
	Memory     int64  `json:"memory"`
	MaxValue   int    `json:"max_value"`
	Slots      int    `json:"slots"`
	Procs      int    `json:"procs"` // GOMAXPROCS of the server process (machineProcs: the machine's)
	// SpinIdle is how long an idle partition keeps polling before it
	// blocks on its doorbell (0: the server's default).
	SpinIdle time.Duration `json:"spin_idle"`
	IdlePoll bool          `json:"idle_poll"`
	// MaxClients (0: the server's default).
	MaxClients int `json:"max_clients"`
	// JoinPool is server.Config.JoinPool (0: the default, negative: none).
	JoinPool int `json:"join_pool"`
	// Defaults runs the server as `jakiro server` does with no flags: its
	// own partition count and the machine's GOMAXPROCS.
	Defaults bool `json:"defaults"`
	// Memcached also serves the memcached door (package server/memcache)
	// on a free loopback port (serverProc.DoorAddr).
	Memcached bool `json:"memcached"`
	// OwnSession starts the server as the leader of a session of its own,
	// as a daemon runs (its own autogroup: see envJoinSpawn).
	OwnSession bool `json:"-"`
}

// machineProcs as serverOpts.Procs leaves the server at the machine's
// GOMAXPROCS, as `jakiro server` runs.
const machineProcs = -1

func (o serverOpts) withDefaults() serverOpts {
	if o.Memory == 0 {
		o.Memory = 256 << 20
	}
	if o.MaxValue == 0 {
		o.MaxValue = 4 << 10
	}
	if o.Defaults {
		return o
	}
	if o.Partitions == 0 {
		o.Partitions = 1
	}
	if o.Memory == 0 {
		o.Memory = 256 << 20
	}
	if o.MaxValue == 0 {
		o.MaxValue = 4 << 10
	}
	if o.Slots == 0 {
		o.Slots = client.DefaultWindow
	}
	if o.Procs == 0 {
		// One P per busy-polling partition and one for accepting clients,
		// which is idle during a measurement.
		o.Procs = o.Partitions + 1
	}
	return o
}

// String is how results record the server settings.
func (o serverOpts) String() string {
	if o.Defaults {
		return fmt.Sprintf("server defaults (partitions=%d, machine GOMAXPROCS, at least partitions + tcp pollers + 1) memory=%dMiB max_value=%d",
			server.DefaultPartitions(), o.Memory>>20, o.MaxValue)
	}
	spin := "default"
	if o.SpinIdle > 0 {
		spin = o.SpinIdle.String()
	}
	idle := "bell"
	if o.IdlePoll {
		idle = "poll"
	}
	procs := strconv.Itoa(o.Procs)
	if o.Procs == machineProcs {
		procs = "machine"
	}
	return fmt.Sprintf("partitions=%d slots=%d memory=%dMiB max_value=%d server_gomaxprocs=%s spin_idle=%s idle=%s",
		o.Partitions, o.Slots, o.Memory>>20, o.MaxValue, procs, spin, idle)
}

// serveChildIfRequested turns this process into a Jakiro server when it
// was started by startServer, and never returns then. Call it first in
// main and TestMain.
func serveChildIfRequested() {
	cfgJSON := os.Getenv(envServe)
	if cfgJSON == "" {
		return
	}
	var o serverOpts
	if err := json.Unmarshal([]byte(cfgJSON), &o); err != nil {
		fmt.Fprintln(os.Stderr, "jakiro-bench serve:", err)
		os.Exit(2)
	}
	srv, err := server.New(server.Config{Listen: o.Listen, Partitions: o.Partitions, Memory: o.Memory,
		MaxValue: o.MaxValue, Slots: o.Slots, SpinIdle: o.SpinIdle, IdlePoll: o.IdlePoll, MaxClients: o.MaxClients, JoinPool: o.JoinPool,
		DoorProcs: o.Memcached, AccessTimes: o.Memcached, SpareProcs: true}) // as `jakiro server` runs
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	// The parent holds our stdin: EOF means it stopped us or died.
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	ready := srv.Addr()
	if o.Memcached {
		door, err := memcache.Listen(memcache.Config{Addr: "127.0.0.1:0"}, srv.Door())
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		go door.Serve(ctx)
		defer door.Close()
		ready += " " + door.Addr()
	}
	fmt.Println("READY", ready)
	err = srv.Serve(ctx)
	srv.Close()
	if err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "jakiro-bench serve:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// serverProc is a running child server.
type serverProc struct {
	Addr     string
	DoorAddr string // the memcached door's host:port (serverOpts.Memcached)
	Opts     serverOpts
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	done     chan struct{}
	dir      string
}

// startServer starts a Jakiro server process. An empty Listen means shm in
// a fresh temporary directory.
func startServer(o serverOpts) (*serverProc, error) {
	o = o.withDefaults()
	p := &serverProc{Opts: o, done: make(chan struct{})}
	if o.Listen == "" {
		dir, err := os.MkdirTemp("", "jakiro-bench")
		if err != nil {
			return nil, err
		}
		p.dir = dir
		o.Listen = "shm://" + filepath.Join(dir, "jakiro.sock")
	}
	cfg, _ := json.Marshal(o)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envServe+"="+string(cfg))
	if o.Procs > 0 {
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(o.Procs))
	}
	cmd.Stderr = os.Stderr
	if o.OwnSession {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	p.cmd, p.stdin = cmd, stdin
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- strings.TrimSpace(line)
		io.Copy(io.Discard, stdout)
	}()
	go func() { cmd.Wait(); close(p.done) }()
	select {
	case line := <-ready:
		if addr, ok := strings.CutPrefix(line, "READY "); ok {
			p.Addr, p.DoorAddr, _ = strings.Cut(addr, " ")
			return p, nil
		}
		p.Stop()
		return nil, fmt.Errorf("server: %s", line)
	case <-time.After(30 * time.Second):
		p.Stop()
		return nil, fmt.Errorf("server not ready after 30s")
	}
}

// Stop ends the server (EOF on its stdin, then SIGKILL after 5s).
func (p *serverProc) Stop() {
	p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
	if p.dir != "" {
		os.RemoveAll(p.dir)
	}
}

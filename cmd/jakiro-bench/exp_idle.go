package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/jakiro-kv/jakiro/client"
)

// runIdle: one active client (GETs one at a time) beside 0 to 10,000
// connected clients that send nothing, on shm and tcp. A partition polls
// only the clients with recent requests, so the idle ones should cost the
// active one nothing. Each repetition ramps the idle connections up
// through every count, measuring at each; the repetitions interleave.
func runIdle(e *env) error {
	counts := []int{0, 100, 1000, 2000, 5000, 10000}
	fabrics := []string{"shm", "tcp"}
	if e.Quick {
		counts, fabrics = []int{0, 100}, []string{"shm"}
	}
	ks := newKeySet(min(e.Keys, 10000), sizeDist{Fixed: 32})
	o := serverOpts{MaxClients: 2*counts[len(counts)-1] + 64}
	t := &table{Name: "idle", Cols: append(append([]string{"fabric", "idle_clients"}, repCols...), append(loadCols, "vs_no_idle")...),
		Settings: e.settings(o, "workload: one client, GETs one at a time (window 1), 32 B values, uniform over the preloaded keys",
			fmt.Sprintf("idle clients: connected with client.Dial (default options) and sending nothing, from child processes of at most %d connections each", holdPerProc),
			fmt.Sprintf("each point: median of %d repetitions; each repetition ramps the idle connections up through every count", e.reps()))}
	var ss []series
	for _, fab := range fabrics {
		o := o
		if fab == "tcp" {
			o.Listen = "tcp://127.0.0.1:0"
		}
		runs := map[int][]loadResult{}
		reached := counts[len(counts)-1]
		err := e.server(o, ks, func(addr string) error {
			for rep := 0; rep < e.reps(); rep++ {
				idle := &idleClients{}
				for _, n := range counts {
					if n > reached {
						break
					}
					t0 := time.Now()
					if err := idle.grow(e.Ctx, addr, n); err != nil {
						e.logf("  %s: %d idle connections failed: %v", fab, n, err)
						t.Settings = append(t.Settings, fmt.Sprintf("%s: connecting %d idle clients failed (repetition %d): %v", fab, n, rep+1, err))
						reached = n - 1
						break
					}
					e.logf("  %s: %d idle connections (%v to connect)", fab, n, time.Since(t0).Round(time.Millisecond))
					// Connecting rings the server (each new client is found
					// by a sweep): measure the idle clients, not their
					// arrival.
					time.Sleep(settleAfterConnect)
					r, err := e.point(fmt.Sprintf("%s idle=%d rep %d", fab, n, rep+1), loadSpec{Addr: addr, Mode: client.ModeAuto, Clients: 1, Window: 1, GetRatio: 1}, ks)
					if err != nil {
						idle.close()
						return err
					}
					runs[n] = append(runs[n], r)
				}
				idle.close()
			}
			return nil
		})
		if err != nil {
			return err
		}
		s := series{Name: fab}
		base := 0.0
		for _, n := range counts {
			if len(runs[n]) == 0 {
				continue
			}
			r, sp := medianRun(runs[n])
			if n == 0 {
				base = sp.Med
			}
			vs := ""
			if base > 0 {
				vs = fmt.Sprintf("%.3f", sp.Med/base)
			}
			t.add(append(append(append([]any{fab, n}, repVals(sp)...), loadVals(r)...), vs)...)
			s.addSpread(float64(max(n, 1)), sp)
			e.logf("  %s idle=%d: %s Mops, %s of no idle", fab, n, sp, vs)
		}
		ss = append(ss, s)
	}
	png := e.png("idle")
	if err := linePlot(png, "One active client beside idle connections (0 plotted at 1)", "idle client connections", "Mops (active client)", ss, true); err != nil {
		return err
	}
	return e.done(t, png)
}

// Idle clients live in holder processes of at most holdPerProc
// connections each: a client connection costs two descriptors here (its
// socket and the server's doorbell), and a process may have 20,000.
const (
	envHold     = "JAKIRO_BENCH_IDLE_HOLD"
	holdPerProc = 4000
	dialers     = 8 // concurrent handshakes in a holder
	// settleAfterConnect: the pause between connecting idle clients and
	// measuring beside them.
	settleAfterConnect = time.Second
)

// idleClients are connections that send nothing, held by child processes.
type idleClients struct {
	n     int
	procs []*holder
}

type holder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// grow starts holders until there are n connections.
func (ic *idleClients) grow(ctx context.Context, addr string, n int) error {
	for ic.n < n {
		k := min(n-ic.n, holdPerProc)
		h, err := startHolder(ctx, addr, k)
		if err != nil {
			return err
		}
		ic.procs = append(ic.procs, h)
		ic.n += k
	}
	return nil
}

// startHolder starts a process holding k idle connections to addr and
// waits until they are all connected.
func startHolder(ctx context.Context, addr string, k int) (*holder, error) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d %s", envHold, k, addr), "GOMAXPROCS=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	h := &holder{cmd: cmd, stdin: stdin}
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(l)
		io.Copy(io.Discard, out)
	}()
	select {
	case l := <-line:
		if l == "READY" {
			return h, nil
		}
		h.stop()
		return nil, fmt.Errorf("idle holder: %s", l)
	case <-time.After(5 * time.Minute):
	case <-ctx.Done():
	}
	h.stop()
	return nil, fmt.Errorf("idle holder: %d connections not up in 5 minutes", k)
}

func (h *holder) stop() {
	h.stdin.Close()
	done := make(chan struct{})
	go func() { h.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		h.cmd.Process.Kill()
		<-done
	}
}

func (ic *idleClients) close() {
	for _, h := range ic.procs {
		h.stop()
	}
	*ic = idleClients{}
}

// holdIdleIfRequested is the holder process: it dials, says READY (or
// the error), and keeps its connections until its stdin ends.
func holdIdleIfRequested() {
	v := os.Getenv(envHold)
	if v == "" {
		return
	}
	var k int
	var addr string
	if _, err := fmt.Sscan(v, &k, &addr); err != nil {
		fmt.Println("ERROR", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	cs := make([]*client.Client, k)
	errs := make([]error, dialers)
	var wg sync.WaitGroup
	for w := 0; w < dialers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < k && errs[w] == nil; i += dialers {
				cs[i], errs[w] = client.Dial(ctx, addr)
			}
		}()
	}
	wg.Wait()
	cancel()
	runtime.GC() // now, not while the active client is measured
	if err := errors.Join(errs...); err != nil {
		fmt.Println("ERROR", err)
	} else {
		fmt.Println("READY")
	}
	io.Copy(io.Discard, os.Stdin)
	for _, c := range cs {
		if c != nil {
			c.Close()
		}
	}
	os.Exit(0)
}

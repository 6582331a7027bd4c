package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/rfp"
)

// TestFaults: a real `jakiro server` process against clients that die,
// a server that dies, and a server that is told to stop.
func TestFaults(t *testing.T) {
	bin := buildJakiro(t)
	for _, fab := range hostFabrics() {
		t.Run(fab, func(t *testing.T) {
			t.Run("ClientsKilled", func(t *testing.T) { testClientsKilled(t, bin, fab) })
			t.Run("ServerKilled", func(t *testing.T) { testServerKilled(t, bin, fab) })
			t.Run("SIGTERM", func(t *testing.T) { testSIGTERM(t, bin, fab) })
			t.Run("ServerRestarted", func(t *testing.T) { testServerRestarted(t, bin, fab) })
		})
	}
}

const (
	victimProcs      = 20
	clientsPerVictim = 10 // 200 clients in all
)

// testClientsKilled: 200 clients in 20 processes with requests in flight
// are SIGKILLed; the server's client count, fds and RSS return to what
// they were with none of them.
func testClientsKilled(t *testing.T, bin, fab string) {
	// --pprof lets the test run the server's GC: an idle server allocates
	// nothing, so without it the garbage of 200 sessions would wait for
	// Go's periodic GC (2 minutes) before its memory could go back.
	metrics := freeLoopbackPort(t)
	srv := startJakiro(t, bin, listenFor(t, fab), "--memory", "64MiB", "--max-value", "4KiB", "--metrics", metrics, "--pprof")
	observer := dialT(t, srv.Addr)
	// Baseline: a server that has had a client come and go, and serves one.
	if err := clientWorkload(srv.Addr, rfp.ModeRFP, "baseline", 200); err != nil {
		t.Fatal(err)
	}
	if !waitFor(30*time.Second, func() bool { return clientsOnServer(t, observer) == 1 }) {
		t.Fatalf("baseline: server counts %d clients, want 1", clientsOnServer(t, observer))
	}
	baseFDs, baseRSS := openFDCount(t, srv.pid()), rss(t, srv.pid())
	t.Logf("baseline: %d fds, RSS %d MiB", baseFDs, baseRSS>>20)

	var victims []*exec.Cmd
	defer func() {
		for _, v := range victims {
			v.Process.Kill()
			v.Wait()
		}
	}()
	ready := make(chan error, victimProcs)
	for i := range victimProcs {
		v := exec.Command(os.Args[0], "-test.run=^TestFaultVictimHelper$")
		v.Env = append(os.Environ(), "JAKIRO_FAULT_VICTIM_ADDR="+srv.Addr,
			"JAKIRO_FAULT_VICTIM_CLIENTS="+strconv.Itoa(clientsPerVictim), "JAKIRO_FAULT_VICTIM_ID="+strconv.Itoa(i),
			"GOMAXPROCS=1")
		v.Stderr = os.Stderr
		out, err := v.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Start(); err != nil {
			t.Fatal(err)
		}
		victims = append(victims, v)
		go func() {
			sc := bufio.NewScanner(out)
			var said []string
			for sc.Scan() {
				if sc.Text() == "READY" {
					ready <- nil
					io.Copy(io.Discard, out)
					return
				}
				said = append(said, sc.Text())
			}
			ready <- fmt.Errorf("victim %d ended before it was ready:\n%s", i, strings.Join(said, "\n"))
		}()
	}
	deadline := time.After(3 * time.Minute)
	for range victimProcs {
		select {
		case err := <-ready:
			if err != nil {
				t.Fatal(err)
			}
		case <-deadline:
			t.Fatal("victims not all connected and busy after 3 minutes")
		}
	}
	peakClients, peakFDs, peakRSS := clientsOnServer(t, observer), openFDCount(t, srv.pid()), rss(t, srv.pid())
	t.Logf("with victims: %d clients, %d fds, RSS %d MiB", peakClients, peakFDs, peakRSS>>20)
	if peakClients != 1+victimProcs*clientsPerVictim {
		t.Fatalf("server counts %d clients, want %d", peakClients, 1+victimProcs*clientsPerVictim)
	}
	// Every victim is mid-loop: each has batches in flight all the time.
	for _, v := range victims {
		v.Process.Signal(syscall.SIGKILL)
	}
	for _, v := range victims {
		v.Wait()
	}
	victims = nil
	// Generous bounds: fds exactly back, RSS within 16 MiB of the baseline
	// (the Go heap may keep some of what 200 sessions used).
	const rssSlack = 16 << 20
	var clients, fds int
	var mem int64
	lastGC := time.Time{}
	back := waitFor(60*time.Second, func() bool {
		if time.Since(lastGC) > time.Second {
			lastGC = time.Now()
			runServerGC(t, metrics)
		}
		clients, fds, mem = clientsOnServer(t, observer), openFDCount(t, srv.pid()), rss(t, srv.pid())
		return clients == 1 && fds <= baseFDs && mem <= baseRSS+rssSlack
	})
	t.Logf("after the kill: %d clients, %d fds, RSS %d MiB", clients, fds, mem>>20)
	if !back {
		t.Fatalf("60 s after 200 clients were killed: %d clients (want 1), %d fds (baseline %d), RSS %d MiB (baseline %d MiB + %d)",
			clients, fds, baseFDs, mem>>20, baseRSS>>20, rssSlack>>20)
	}
	if err := clientWorkload(srv.Addr, rfp.ModeRFP, "after-kill", 200); err != nil {
		t.Fatal("server unusable after its clients were killed:", err)
	}
}

// TestFaultVictimHelper is not a test: it is the client process
// testClientsKilled starts and kills (with JAKIRO_FAULT_VICTIM_ADDR set).
// It connects its clients, keeps batches in flight on every one, says
// READY once each has completed one, and runs until killed (5 minutes at
// most).
func TestFaultVictimHelper(t *testing.T) {
	addr := os.Getenv("JAKIRO_FAULT_VICTIM_ADDR")
	if addr == "" {
		t.Skip("helper process of TestFaults/*/ClientsKilled; runs when JAKIRO_FAULT_VICTIM_ADDR is set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	n := envInt("JAKIRO_FAULT_VICTIM_CLIENTS", 1)
	var started sync.WaitGroup
	started.Add(n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			c, err := client.Dial(ctx, addr, client.WithMode(modes[i%len(modes)]))
			if err != nil {
				errs <- err
				return
			}
			var b client.Batch
			for round := 0; ctx.Err() == nil; round++ {
				b.Reset()
				for j := range 16 {
					key := fmt.Appendf(nil, "victim:%s:%d:%d", os.Getenv("JAKIRO_FAULT_VICTIM_ID"), i, j)
					if round%2 == 0 {
						b.Put(key, value(string(key), 300), 0)
					} else {
						b.Get(key)
					}
				}
				if err := c.Run(ctx, &b); err != nil {
					errs <- err
					return
				}
				if round == 0 {
					started.Done()
				}
			}
			errs <- nil
		}()
	}
	done := make(chan struct{})
	go func() { started.Wait(); close(done) }()
	select {
	case <-done:
		fmt.Println("READY")
	case err := <-errs:
		t.Fatalf("victim client: %v", err)
	}
	if err := <-errs; err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("victim client: %v", err)
	}
}

// testServerKilled: the server is SIGKILLed while clients of every mode
// have calls in flight, each with a minute-long context; every call in
// flight then, and every call after, fails within 1 s of the kill.
func testServerKilled(t *testing.T, bin, fab string) {
	srv := startJakiro(t, bin, listenFor(t, fab), "--memory", "64MiB", "--max-value", "4KiB")
	const perMode = 2
	type outcome struct {
		mode     rfp.Mode
		failedAt time.Time
		err      error
		calls    int
	}
	results := make(chan outcome, perMode*len(modes))
	var running sync.WaitGroup
	for _, m := range modes {
		for i := range perMode {
			c := dialT(t, srv.Addr, client.WithMode(m))
			running.Add(1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				key := fmt.Appendf(nil, "killed:%s:%d", m, i)
				var b client.Batch
				calls := 0
				first := true
				for {
					var err error
					switch calls % 3 {
					case 0:
						err = c.Put(ctx, key, value(string(key), 100), 0)
					case 1:
						_, err = c.Get(ctx, key)
					case 2:
						b.Reset()
						for j := range 8 {
							b.Get(fmt.Appendf(nil, "%s:%d", key, j))
						}
						err = c.Run(ctx, &b)
					}
					calls++
					if first && calls >= 10 {
						first = false
						running.Done() // busy: the kill may come
					}
					if err != nil && !errors.Is(err, client.ErrNotFound) {
						results <- outcome{mode: m, failedAt: time.Now(), err: err, calls: calls}
						if first {
							running.Done()
						}
						return
					}
				}
			}()
		}
	}
	running.Wait()
	killed := time.Now()
	srv.Signal(syscall.SIGKILL)
	// The clock starts when the server is gone: the kernel's teardown of a
	// killed process (its mappings, its sockets) is not the clients' to
	// detect, and under -race on a loaded machine it alone can take a
	// second.
	select {
	case <-srv.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the killed server process has not exited in 30 s")
	}
	died := time.Now()
	t.Logf("server process gone %v after SIGKILL", died.Sub(killed).Round(time.Millisecond))
	for range perMode * len(modes) {
		select {
		case o := <-results:
			if o.failedAt.Before(killed) {
				t.Errorf("%s: call %d failed before the server was killed: %v", o.mode, o.calls, o.err)
				continue
			}
			took := max(o.failedAt.Sub(died), 0)
			t.Logf("%s: call %d failed %v after the server was gone: %v", o.mode, o.calls, took.Round(time.Millisecond), o.err)
			if took > time.Second {
				t.Errorf("%s: a call took %v to fail after the server was gone, want at most 1 s", o.mode, took)
			}
			if errors.Is(o.err, context.DeadlineExceeded) {
				t.Errorf("%s: a call hung until its context ended", o.mode)
			}
		case <-time.After(70 * time.Second):
			t.Fatal("a client call still hangs 70 s after the server was killed")
		}
	}
}

// testSIGTERM: a server with busy clients returns within 2 s of SIGTERM,
// and its clients' calls fail rather than hang.
func testSIGTERM(t *testing.T, bin, fab string) {
	srv := startJakiro(t, bin, listenFor(t, fab), "--memory", "64MiB", "--max-value", "4KiB")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	busy := make(chan struct{}, len(modes))
	for _, m := range modes {
		c := dialT(t, srv.Addr, client.WithMode(m))
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := []byte("sigterm:" + m.String())
			for i := 0; ; i++ {
				if err := c.Put(ctx, key, value(string(key), 200), 0); err != nil {
					return
				}
				if i == 10 {
					busy <- struct{}{}
				}
			}
		}()
	}
	for range modes {
		<-busy
	}
	took, ok := srv.terminate(10 * time.Second)
	t.Logf("SIGTERM: server exited after %v: %v", took.Round(time.Millisecond), srv.err)
	if !ok {
		t.Fatalf("server still running %v after SIGTERM", took)
	}
	if took > 2*time.Second {
		t.Errorf("server took %v to exit on SIGTERM, want at most 2 s", took)
	}
	if srv.err != nil {
		t.Errorf("server exit on SIGTERM: %v\n%s", srv.err, srv.logText())
	}
	wg.Wait() // every client call ends (with an error) rather than hang
	if ctx.Err() != nil {
		t.Error("client calls hung until their context ended after the server stopped")
	}
}

// testServerRestarted: clients recover once the server is back on the same
// address. Waits for reconnecting clients.
func testServerRestarted(t *testing.T, bin, fab string) {
	listen := listenFor(t, fab)
	srv := startJakiro(t, bin, listen, "--memory", "64MiB")
	c := dialT(t, srv.Addr)
	ctx := ctxT(t)
	if err := c.Put(ctx, []byte("restart"), []byte("before"), 0); err != nil {
		t.Fatal(err)
	}
	srv.Signal(syscall.SIGKILL)
	<-srv.done
	if fab == "tcp" {
		listen = srv.Addr // the same port again
	}
	startJakiro(t, bin, listen, "--memory", "64MiB")
	var err error
	if !waitFor(10*time.Second, func() bool {
		err = c.Put(ctx, []byte("restart"), []byte("after"), 0)
		return err == nil
	}) {
		t.Fatalf("client has not recovered 10 s after the server restarted: %v", err)
	}
	if v, err := c.Get(ctx, []byte("restart")); err != nil || string(v) != "after" {
		t.Fatalf("get after restart: %q %v", v, err)
	}
}

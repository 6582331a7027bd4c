package client_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jakiro-kv/jakiro/server/servertest"
)

// cpuTime is this process's CPU time so far.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A caller whose server on this host stops answering (its process
// stopped: starved of CPU, to the client) stops polling for the answer
// after stallNapNS and sleeps until its context ends: it leaves the cores
// to whatever the server waits for. A driver that kept polling (or
// yielding) used a core for the whole wait, and hundreds of them starved
// the host (client/stall.go).
func TestStalledServerNaps(t *testing.T) {
	const wait = 400 * time.Millisecond
	for _, listen := range []string{shmListen(t, "nap"), "tcp://127.0.0.1:0"} {
		t.Run(listen[:3], func(t *testing.T) {
			p := servertest.Start(t, listen)
			c := dial(t, p.Addr)
			ctx := context.Background()
			key := []byte("stalled-key")
			if err := c.Put(ctx, key, []byte("v"), 0); err != nil {
				t.Fatal(err)
			}
			p.Stop(t)
			defer p.Signal(syscall.SIGCONT)
			wctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			cpu0, t0 := cpuTime(t), time.Now()
			_, err := c.Get(wctx, key)
			cpu, wall := cpuTime(t)-cpu0, time.Since(t0)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("GET from a stopped server: %v, want the context's deadline", err)
			}
			t.Logf("waited %v for a stopped server, using %v of CPU", wall.Round(time.Millisecond), cpu.Round(time.Millisecond))
			// Spinning, the wait used a core throughout (~100%); napping,
			// about a millisecond and the naps' wake-ups. Half is far
			// from both.
			if cpu > wall/2 {
				t.Errorf("waiting %v for a stopped server used %v of CPU: the caller polled instead of sleeping", wall, cpu)
			}
			p.Signal(syscall.SIGCONT)
			if _, err := c.Get(ctx, key); err != nil {
				t.Fatalf("GET once the server runs again: %v", err)
			}
		})
	}
}

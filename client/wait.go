package client

import (
	"context"
	"runtime"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// waiting counts this process's goroutines inside a wait loop, across
// all clients. While there are more of them than Ps, a waiter that spins
// holds a core another waiter (or the goroutine building the next batch)
// could use, so waiters yield at every spin; otherwise a yield every
// 16th spin is enough, and cheaper (yielding at every 4th cost a lone
// client ~20% of its GET rate).
var waiting atomic.Int32

// procs caches GOMAXPROCS (reading it takes the scheduler lock); Dial
// and long waits refresh it.
var procs atomic.Int32

func init() { refreshProcs() }

func refreshProcs() { procs.Store(int32(runtime.GOMAXPROCS(0))) }

// waitState is one wait loop's spin count; done must follow the loop.
type waitState struct {
	spins   int
	counted bool
}

func (w *waitState) done() {
	if w.counted {
		waiting.Add(-1)
		w.counted = false
	}
}

// wait releases the lock briefly so other goroutines can drive the engine,
// and checks ctx now and then. Called with c.mu held; returns with it held.
func (c *Client) wait(ctx context.Context, w *waitState) error {
	w.spins++
	if !w.counted {
		w.counted = true
		waiting.Add(1)
	}
	if w.spins&63 == 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	crowded := waiting.Load() > procs.Load()
	if crowded {
		c.in.Yielded()
	}
	c.mu.Unlock()
	if crowded || w.spins&15 == 0 {
		runtime.Gosched()
	}
	if w.spins&1023 == 0 {
		// Waiting long: give the core to other processes (the server may
		// be one of them on a busy machine); Gosched only yields to
		// goroutines.
		unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		refreshProcs()
	}
	c.mu.Lock()
	return nil
}

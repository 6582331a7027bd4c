package client

import (
	"context"
	"runtime"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A waiter spins on the engine, releasing the lock between steps. How
// often it gives its core away, in spins (each a power of two):
const (
	// yieldEvery: Gosched to this process's other goroutines, when
	// waiters fill the Ps (when they outnumber them: at every spin).
	yieldEvery = 16
	// ctxEvery: look at the context (ctx.Err takes a lock).
	ctxEvery = 64
	// passEvery: hand the place to spin (spinGate) to a parked waiter.
	passEvery = 16
	// osYieldEvery: sched_yield to other processes (the server may be one
	// of them on a busy machine; Gosched yields only to goroutines).
	osYieldEvery = 1024
)

// waiting counts this process's goroutines inside a wait loop, across
// all clients. While there are more of them than Ps, a waiter that spins
// holds a core another waiter (or the goroutine building the next batch)
// could use, so waiters yield at every spin; otherwise every yieldEvery
// spins, which costs a lone client less.
var waiting atomic.Int32

// procs caches GOMAXPROCS (reading it takes the scheduler lock); Dial
// and long waits refresh it.
var procs atomic.Int32

func init() { refreshProcs() }

func refreshProcs() { procs.Store(int32(runtime.GOMAXPROCS(0))) }

// waitState is one wait loop's spin count; done must follow the loop.
type waitState struct {
	spins    uint
	counted  bool
	spinning bool // holds a place in gate
}

func (w *waitState) done() {
	if w.counted {
		waiting.Add(-1)
		w.counted = false
	}
	if w.spinning {
		gate.leave()
		w.spinning = false
	}
}

// wait releases the lock briefly so other goroutines can drive the engine,
// and checks ctx now and then. Called with c.mu held; returns with it held.
func (c *conn) wait(ctx context.Context, w *waitState) error {
	w.spins++
	if !w.counted {
		w.counted = true
		waiting.Add(1)
	}
	if w.spins%ctxEvery == 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	crowded := waiting.Load() > procs.Load()
	if crowded {
		c.eng.Yielded()
	}
	woke := c.wokeBell
	c.wokeBell = false
	c.mu.Unlock()
	if woke {
		// The partition we woke may wait for this very core (the kernel
		// often runs a woken thread where its waker runs): spinning on it
		// until the next osYieldEvery kept it from answering for ~100 µs.
		unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
	if w.spinning && w.spins%passEvery == 0 && gate.queued() {
		gate.leave()
		w.spinning = false
	}
	if !w.spinning && procs.Load() > 1 { // one P: only one goroutine runs anyway
		if err := gate.enter(ctx); err != nil {
			c.mu.Lock()
			return err
		}
		w.spinning = true
	} else if crowded || w.spins%yieldEvery == 0 && waiting.Load() >= procs.Load() {
		// With fewer waiters than Ps a P is likely idle: other
		// goroutines run there, and a Gosched would only wake a thread
		// for it (a futex and a context switch each).
		runtime.Gosched()
	}
	if w.spins%osYieldEvery == 0 {
		unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		refreshProcs()
	}
	c.mu.Lock()
	return nil
}

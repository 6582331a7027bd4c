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
	others   [driveMax]*conn
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
//
// Where waiters outnumber the places to spin (spinGate), the others park,
// and the spinner drives their connections too: a parked caller whose
// answer that delivers (cl, when not nil, is the call waited for) wakes
// at once rather than when a spinner hands over its place. With one P
// there is no gate: waiters take turns (Gosched) and each drives its own.
func (c *conn) wait(ctx context.Context, w *waitState, cl *call) error {
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
	var wake <-chan struct{}
	if cl != nil {
		cl.parked = true
		wake = cl.wake
	}
	c.mu.Unlock()
	if woke {
		// The partition we woke may wait for this very core (the kernel
		// often runs a woken thread where its waker runs): spinning on it
		// until the next osYieldEvery kept it from answering for ~100 µs.
		unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
	if w.spinning && gate.queued() {
		for _, o := range gate.parkedConns(c, &w.others) {
			o.tryProgress()
		}
		clear(w.others[:])
		if w.spins%passEvery == 0 {
			gate.leave()
			w.spinning = false
		}
	}
	if !w.spinning && procs.Load() > 1 { // one P: only one goroutine runs anyway
		placed, err := gate.enter(ctx, c, wake)
		if err != nil {
			c.mu.Lock()
			c.unpark(cl)
			return err
		}
		w.spinning = placed
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
	c.unpark(cl)
	return nil
}

// unpark ends cl's stay at the gate (c.mu held): no more wake-ups, and
// none left over for its next wait.
func (c *conn) unpark(cl *call) {
	if cl == nil {
		return
	}
	cl.parked = false
	select {
	case <-cl.wake:
	default:
	}
}

// tryProgress steps the engine for the callers parked on c, unless
// someone holds c already (then that one steps it).
func (c *conn) tryProgress() {
	if !c.mu.TryLock() {
		return
	}
	if !c.closed {
		c.progressLocked() // an error is the engine's: its callers see it on their next step
	}
	c.mu.Unlock()
}

package client

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/jakiro-kv/jakiro/rfp"
)

// A call is one operation on its way: queued for its connection's driver,
// in a ring, then done. Its caller and the driver hand it over
// through state, so a caller whose context ends can abandon it at any
// point without racing the driver for its bytes.
type call struct {
	w     *waiter
	state atomic.Uint32
	// done is its caller's context's Done channel, nil if it can never
	// end: the driver looks at it (pollGroup.wakeEnded) beside w and
	// state, which it reads anyway, and not through the context, whose
	// chain of values is more cache misses and whose Err takes a lock
	// that every goroutine under one parent context shares.
	done <-chan struct{}

	// The request, read by the driver while the call is queued.
	p     int
	op    rfp.Op
	key   []byte
	value []byte
	ttl   uint32
	// When the driver queued it for a ring (callqueue.go).
	queuedAt int64

	// The outcome, written by the driver before done.
	st  rfp.Status
	val []byte // the value is appended here (a caller's dst, or a reused buffer)
	err error  // the connection failed under the call
}

const (
	callQueued    uint32 = iota // in its connection's inbox or queue
	callTaking                  // the driver is copying it into a ring
	callSent                    // in a ring, the answer not in yet
	callFinishing               // the driver is writing the outcome
	callDone                    // outcome written
	callAbandoned               // its caller gave up: the driver drops it
)

// reset readies c for a new request by w.
func (c *call) reset(w *waiter, p int, op rfp.Op, key, value []byte, ttl uint32, dst []byte) {
	c.w, c.p, c.op, c.key, c.value, c.ttl = w, p, op, key, value, ttl
	c.done = w.done
	c.st, c.val, c.err = 0, dst, nil
	c.state.Store(callQueued)
}

// finish records the outcome and tells the caller, unless it gave up;
// true if it woke the caller. Only the driver calls it.
func (c *call) finish(st rfp.Status, val []byte, err error, driver *waiter) bool {
	if c.w == driver {
		// The driver's own call: its caller is driving, so it cannot be
		// abandoning it.
		c.st, c.err = st, err
		if err == nil {
			c.val = append(c.val, val...)
		}
		c.state.Store(callDone)
		driver.pending.Add(-1)
		return false
	}
	if !c.state.CompareAndSwap(callSent, callFinishing) && !c.state.CompareAndSwap(callQueued, callFinishing) {
		return false // abandoned: its caller reads nothing of it, and owns val again
	}
	w := c.w // c is its caller's again once done
	c.st, c.err = st, err
	if err == nil {
		c.val = append(c.val, val...)
	}
	c.state.Store(callDone)
	if w.pending.Add(-1) == 0 && w != driver {
		w.signal() // w may be on to its next calls: a stale token only makes it look again
		return true
	}
	return false
}

// abandon detaches the call from its caller (whose context ended); false
// if it is done already, and its outcome stands.
func (c *call) abandon() bool {
	for {
		switch s := c.state.Load(); s {
		case callDone:
			return false
		case callTaking, callFinishing:
			// The driver is copying the key and value, or writing the
			// value into the caller's buffer: both stay the driver's until
			// it is through, which takes nanoseconds.
			continue
		default:
			if c.state.CompareAndSwap(s, callAbandoned) {
				return true
			}
		}
	}
}

// waiter is one goroutine waiting for its calls (one, or a batch's). It
// parks on wake; the driver that finishes its last call, or hands it the
// driving, sends a token there. A token means "look again", so a stale
// one costs a look, never a wrong answer.
type waiter struct {
	wake    chan struct{}
	pending atomic.Int32  // calls not done
	role    atomic.Uint32 // roleWaiting, roleGone, or roleHanded + the handing group's num
	one     call          // the call of a single operation
	seen    []*conn       // handOff's scratch
	// done is the waiting caller's context's Done channel, set before
	// its calls are queued (setCtx), nil if it can never end: the driver
	// wakes a parked caller whose context ended (pollGroup.wakeEnded).
	done <-chan struct{}
}

// A waiter is handed its group's driving only while it waits: the driver
// and a leaving waiter settle it with one compare-and-swap each, so the
// role never goes to a caller that has returned. A hand names its group,
// so that a hand not taken yet can be taken back for that group
// (pollGroup.steal) and for no other.
const (
	roleWaiting uint32 = iota
	roleGone
	roleHanded // + pollGroup.num
)

// begin readies w for new calls.
func (w *waiter) begin(calls int) {
	w.pending.Store(int32(calls))
	w.role.Store(roleWaiting)
}

// hand gives w the driving of group num; false if it has left.
func (w *waiter) hand(num uint32) bool {
	if !w.role.CompareAndSwap(roleWaiting, roleHanded+num) {
		return false
	}
	w.signal()
	return true
}

// handed takes the role w was handed, if any.
func (w *waiter) handed() bool {
	r := w.role.Load()
	return r >= roleHanded && w.role.CompareAndSwap(r, roleWaiting)
}

// unhand takes back group num's role from w if w has not taken it yet;
// w's token then only makes it look again.
func (w *waiter) unhand(num uint32) bool {
	return w.role.CompareAndSwap(roleHanded+num, roleWaiting)
}

// leave marks w gone; true if it was handed the driving on the way out,
// which it must then pass on.
func (w *waiter) leave() bool {
	for {
		r := w.role.Load()
		if r == roleGone {
			return false
		}
		if w.role.CompareAndSwap(r, roleGone) {
			return r >= roleHanded
		}
	}
}

// setCtx takes the Done channel of w's context before its calls are
// reset: nil if it can never end (context.Background and values on it),
// so nobody looks at it.
func (w *waiter) setCtx(ctx context.Context) { w.done = ctx.Done() }

// closed says whether a context's Done channel is closed: a receive
// that does not block, which reads the channel and takes no lock.
func closed(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// waiters are reused per P (sync.Pool), so parking allocates nothing.
var waiters = sync.Pool{New: func() any { return &waiter{wake: make(chan struct{}, 1)} }}

func getWaiter() *waiter { return waiters.Get().(*waiter) }

// putWaiter returns w for reuse; not after an abandoned call, which the
// driver may still hold.
func putWaiter(w *waiter) {
	w.done = nil
	waiters.Put(w)
}

// giveUp is the caller's side of an await that failed (its context
// ended): it abandons w's calls the driver has not finished; true if it
// abandoned any (w then stays with the driver, which may still hold
// them). When all were done, their outcomes stand, and it waits until
// the driver is through with w: a call is done (outcome written, state
// callDone) a moment before the driver takes it off w.pending, and a
// waiter reused in between would count its next call done at once and
// return an outcome never written (a GET's empty value, no error).
func (w *waiter) giveUp(calls ...*call) bool {
	gaveUp := false
	for _, cl := range calls {
		gaveUp = cl.abandon() || gaveUp
	}
	if gaveUp {
		return true
	}
	for w.pending.Load() > 0 {
		runtime.Gosched() // the driver may have been preempted between the two
	}
	return false
}

func (w *waiter) signal() {
	select {
	case w.wake <- struct{}{}:
	default: // a token is there already
	}
}

// park blocks until a token arrives, and then reports whether ctx has
// ended. It waits on the token alone: the driver sends one to a caller
// whose context ended (pollGroup.wakeEnded). A select on ctx.Done() too
// would lock that channel at each park and wake-up, and a program's
// goroutines often share one context (go-ycsb's threads do): on 16
// cores, 64 goroutines spent 13% of the client's CPU on that lock.
// It looks at done, not at ctx.Err: a crowd's caller wakes cold, and
// its context's chain of values is more cache misses, and Err a lock
// that every goroutine under one parent context takes (1,024 go-ycsb
// threads: 2-3% of the client's CPU in context.(*valueCtx).Err, with
// the driver's looks). A context that can never end is not looked at.
func (w *waiter) park(ctx context.Context) error {
	if w.done == nil {
		<-w.wake
		return nil
	}
	if closed(w.done) {
		return ctx.Err()
	}
	<-w.wake
	if closed(w.done) {
		return ctx.Err()
	}
	return nil
}

// ended: the call's caller is parked (or about to park) with a context
// that ended; the driver wakes it, and it abandons its calls.
func (c *call) ended() bool {
	return c.done != nil && closed(c.done)
}

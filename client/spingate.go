package client

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
)

// spinGate bounds how many goroutines of this process spin in wait loops
// at once; the others park until a spinner hands them its place. A
// waiter that spins holds a core: with more spinners than half the cores,
// a client sharing its machine with the server (shm, loopback tcp) takes
// the cores the server's partitions need, and every operation then waits
// for a scheduler time slice.
//
// Parked waiters' connections keep moving: the spinners drive them too
// (stepParked), a few per spin, round-robin, and wake a waiter as soon as
// its connection delivered results. So a process with a thousand waiting
// goroutines answers each within one pass over the connections, not after
// a thousand hand-offs of the place to spin.
type spinGate struct {
	mu      sync.Mutex
	holders int
	queue   []parked     // oldest first
	cursor  int          // where stepParked goes on in queue
	parked  atomic.Int32 // len(queue), read without the lock
	pool    sync.Pool    // of chan bool (cap 1), so parking does not allocate
}

// parked is one parked waiter.
type parked struct {
	c   *conn  // the connection it waits on; nil: only a place wakes it
	gen uint64 // c.delivered when it parked
	ch  chan bool
}

var gate spinGate

// spinLimit is how many goroutines may spin at once: half the Ps, at
// least one.
func spinLimit() int { return max(1, int(procs.Load())/2) }

// stepBudget is how many parked waiters' connections a spinner drives per
// spin: enough to pass over a thousand in a few hundred spins, few enough
// that its own answer is still looked at every microsecond or so.
const stepBudget = 4

// enter returns true once the caller holds a place to spin, false when
// c delivered results since generation gen (the caller looks again,
// holding no place), or ctx's error (holding none). A nil c waits for a
// place only.
func (g *spinGate) enter(ctx context.Context, c *conn, gen uint64) (bool, error) {
	g.mu.Lock()
	if g.holders < spinLimit() {
		g.holders++
		g.mu.Unlock()
		return true, nil
	}
	if c != nil {
		// Counted before delivered is read, as deliverLocked bumps delivered
		// before it reads the count: one of the two sees the other.
		c.parked.Add(1)
		if c.delivered.Load() != gen {
			c.parked.Add(-1)
			g.mu.Unlock()
			return false, nil
		}
	}
	ch, _ := g.pool.Get().(chan bool)
	if ch == nil {
		ch = make(chan bool, 1)
	}
	g.queue = append(g.queue, parked{c: c, gen: gen, ch: ch})
	g.parked.Store(int32(len(g.queue)))
	g.mu.Unlock()
	select {
	case held := <-ch:
		g.pool.Put(ch)
		return held, nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	if g.remove(ch) {
		g.mu.Unlock()
		g.pool.Put(ch)
		return false, ctx.Err()
	}
	g.mu.Unlock()
	if <-ch { // handed a place as ctx ended: pass it on
		g.leave()
	}
	g.pool.Put(ch)
	return false, ctx.Err()
}

// remove takes ch's waiter off the queue, if it is there. Called with
// g.mu held.
func (g *spinGate) remove(ch chan bool) bool {
	for i := range g.queue {
		if g.queue[i].ch == ch {
			if c := g.queue[i].c; c != nil {
				c.parked.Add(-1)
			}
			g.queue = append(g.queue[:i], g.queue[i+1:]...)
			g.parked.Store(int32(len(g.queue)))
			if g.cursor > i {
				g.cursor--
			}
			return true
		}
	}
	return false
}

// leave gives the caller's place to the oldest parked waiter, if any.
func (g *spinGate) leave() {
	g.mu.Lock()
	if len(g.queue) > 0 && g.holders <= spinLimit() {
		ch := g.queue[0].ch
		g.remove(ch)
		g.mu.Unlock()
		ch <- true
		return
	}
	g.holders--
	g.mu.Unlock()
}

// queued reports whether a waiter is parked: a hint for when to hand
// over.
func (g *spinGate) queued() bool { return g.parked.Load() > 0 }

// stepParked drives up to stepBudget parked waiters' connections (not
// self's: its spinner drives it); a connection that delivers wakes its
// waiters (deliverLocked). One another goroutine is driving is skipped.
func (g *spinGate) stepParked(self *conn) {
	if !g.queued() {
		return
	}
	var pick [stepBudget]*conn
	n := 0
	g.mu.Lock()
	for tries := 0; n < stepBudget && tries < min(len(g.queue), 2*stepBudget); tries++ {
		if g.cursor >= len(g.queue) {
			g.cursor = 0
		}
		c := g.queue[g.cursor].c
		g.cursor++
		if c != nil && c != self && !slices.Contains(pick[:n], c) {
			pick[n] = c
			n++
		}
	}
	g.mu.Unlock()
	for _, c := range pick[:n] {
		if c.mu.TryLock() {
			c.progressLocked()
			c.mu.Unlock()
		}
	}
}

// wake wakes c's parked waiters that have something to look at: results
// delivered since they parked, or (failed) an error.
func (g *spinGate) wake(c *conn, failed bool) {
	gen := c.delivered.Load()
	g.mu.Lock()
	kept, cursor := g.queue[:0], g.cursor
	for i, p := range g.queue {
		if p.c == c && (failed || p.gen != gen) {
			c.parked.Add(-1)
			p.ch <- false
			if i < g.cursor {
				cursor--
			}
			continue
		}
		kept = append(kept, p)
	}
	clear(g.queue[len(kept):])
	g.queue, g.cursor = kept, cursor
	g.parked.Store(int32(len(g.queue)))
	g.mu.Unlock()
}

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
// for a scheduler time slice. Parked waiters lose nothing: their
// requests are posted, and the results wait in the server's rings.
type spinGate struct {
	mu      sync.Mutex
	holders int
	queue   []gateWaiter // parked waiters, oldest first
	parked  atomic.Int32 // len(queue), read without the lock
	pool    sync.Pool    // of chan struct{} (cap 1), so parking does not allocate
}

var gate spinGate

// gateWaiter is a parked waiter: the channel that hands it a place, and
// the connection it waits on (a spinner drives it meanwhile, see drive).
type gateWaiter struct {
	ch chan struct{}
	c  *conn
}

// spinLimit is how many goroutines may spin at once: half the Ps, at
// least one.
func spinLimit() int { return max(1, int(procs.Load())/2) }

// enter returns true once the caller holds a place to spin; false, with
// ctx's error, if ctx ended first, or with nil if wake fired first (what
// the caller waits for arrived while it was parked: a spinner driving c
// delivered it). A nil wake never fires.
func (g *spinGate) enter(ctx context.Context, c *conn, wake <-chan struct{}) (bool, error) {
	g.mu.Lock()
	if g.holders < spinLimit() {
		g.holders++
		g.mu.Unlock()
		return true, nil
	}
	ch, _ := g.pool.Get().(chan struct{})
	if ch == nil {
		ch = make(chan struct{}, 1)
	}
	g.queue = append(g.queue, gateWaiter{ch, c})
	g.parked.Store(int32(len(g.queue)))
	g.mu.Unlock()
	select {
	case <-ch:
		g.pool.Put(ch)
		return true, nil
	case <-ctx.Done():
	case <-wake:
	}
	g.mu.Lock()
	for i, q := range g.queue {
		if q.ch == ch {
			g.queue = append(g.queue[:i], g.queue[i+1:]...)
			g.parked.Store(int32(len(g.queue)))
			g.mu.Unlock()
			g.pool.Put(ch)
			return false, ctx.Err()
		}
	}
	g.mu.Unlock()
	<-ch // handed a place as we left: pass it on
	g.pool.Put(ch)
	g.leave()
	return false, ctx.Err()
}

// driveMax bounds the parked waiters' connections one spin drives.
const driveMax = 8

// parkedConns copies into dst the connections parked waiters wait on,
// other than self, each once, oldest first.
func (g *spinGate) parkedConns(self *conn, dst *[driveMax]*conn) []*conn {
	out := dst[:0]
	g.mu.Lock()
	for _, q := range g.queue {
		if q.c == nil || q.c == self || slices.Contains(out, q.c) {
			continue
		}
		out = append(out, q.c)
		if len(out) == driveMax {
			break
		}
	}
	g.mu.Unlock()
	return out
}

// leave gives the caller's place to the oldest parked waiter, if any.
func (g *spinGate) leave() {
	g.mu.Lock()
	if len(g.queue) > 0 && g.holders <= spinLimit() {
		ch := g.queue[0].ch
		g.queue[0] = gateWaiter{}
		g.queue = append(g.queue[:0], g.queue[1:]...)
		g.parked.Store(int32(len(g.queue)))
		g.mu.Unlock()
		ch <- struct{}{}
		return
	}
	g.holders--
	g.mu.Unlock()
}

// queued reports whether a waiter is parked: a hint for when to hand
// over.
func (g *spinGate) queued() bool { return g.parked.Load() > 0 }

package client

import (
	"context"
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
	queue   []chan struct{} // parked waiters, oldest first
	parked  atomic.Int32    // len(queue), read without the lock
	pool    sync.Pool       // of chan struct{} (cap 1), so parking does not allocate
}

var gate spinGate

// spinLimit is how many goroutines may spin at once: half the Ps, at
// least one.
func spinLimit() int { return max(1, int(procs.Load())/2) }

// enter returns once the caller holds a place to spin, or with ctx's
// error (holding none).
func (g *spinGate) enter(ctx context.Context) error {
	g.mu.Lock()
	if g.holders < spinLimit() {
		g.holders++
		g.mu.Unlock()
		return nil
	}
	ch, _ := g.pool.Get().(chan struct{})
	if ch == nil {
		ch = make(chan struct{}, 1)
	}
	g.queue = append(g.queue, ch)
	g.parked.Store(int32(len(g.queue)))
	g.mu.Unlock()
	select {
	case <-ch:
		g.pool.Put(ch)
		return nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	for i, q := range g.queue {
		if q == ch {
			g.queue = append(g.queue[:i], g.queue[i+1:]...)
			g.parked.Store(int32(len(g.queue)))
			g.mu.Unlock()
			g.pool.Put(ch)
			return ctx.Err()
		}
	}
	g.mu.Unlock()
	<-ch // handed a place as ctx ended: pass it on
	g.pool.Put(ch)
	g.leave()
	return ctx.Err()
}

// leave gives the caller's place to the oldest parked waiter, if any.
func (g *spinGate) leave() {
	g.mu.Lock()
	if len(g.queue) > 0 && g.holders <= spinLimit() {
		ch := g.queue[0]
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

// Package readypool keeps a bounded number of a listener's per-connection
// resources made before anyone dials (fabric.Options.Ready): a join takes
// one instead of making it on its critical path, and one goroutine makes
// the next meanwhile. Each resource goes to exactly one taker and never
// back, so nothing passes between clients. A full pool costs no CPU: the
// goroutine waits until a take leaves room.
package readypool

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jakiro-kv/jakiro/fabric"
)

// Pool holds up to its bound of T.
type Pool[T any] struct {
	make func() (T, error)
	free func(T)
	max  int

	mu     sync.Mutex
	cond   *sync.Cond // the pool is no longer full, or closed
	items  []T
	closed bool
	stop   chan struct{}
	done   chan struct{}

	taken, missed atomic.Uint64
}

// retry is how long the pool waits after it failed to make one (out of
// memory, descriptors or device resources) before it tries again; joins
// meanwhile make their own and report why they cannot.
const retry = 100 * time.Millisecond

// Config says how a pool makes and frees its resources.
type Config[T any] struct {
	Size int               // the bound (Options.Ready)
	Make func() (T, error) // one resource
	Free func(T)           // one nobody took, at Close
	// Idle makes them on a thread of its own at the lowest priority
	// (nice 19): with the CPU nobody else wants, never taking it from
	// the joins under way (on a busy host the pool runs dry, and joins
	// make their own, as without one).
	Idle bool
}

// New starts filling a pool; have are resources made already (a provider
// makes its first at listen, so a size none can have fails the listener,
// not every refill).
func New[T any](c Config[T], have ...T) *Pool[T] {
	p := &Pool[T]{make: c.Make, free: c.Free, max: c.Size, items: have, stop: make(chan struct{}), done: make(chan struct{})}
	p.cond = sync.NewCond(&p.mu)
	go p.fill(c.Idle)
	return p
}

func (p *Pool[T]) fill(idle bool) {
	defer close(p.done)
	if idle {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 19)
	}
	for {
		p.mu.Lock()
		for !p.closed && len(p.items) >= p.max {
			p.cond.Wait()
		}
		closed := p.closed
		p.mu.Unlock()
		if closed {
			return
		}
		r, err := p.make()
		if err != nil {
			select {
			case <-time.After(retry):
				continue
			case <-p.stop:
				return
			}
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			p.free(r)
			return
		}
		p.items = append(p.items, r)
		p.mu.Unlock()
	}
}

// Take hands a prepared resource over for good; false when none is ready
// (the taker makes its own). A nil pool has none. The pool starts making
// the next at once.
func (p *Pool[T]) Take() (T, bool) {
	r, ok := p.TakeLater()
	if ok {
		p.Refill()
	}
	return r, ok
}

// TakeLater is Take, leaving the next to Refill: the goroutine that makes
// it, woken at the take, would take the core of the join that took (on a
// small machine a thread woken preempts its waker) for as long as a make
// lasts.
func (p *Pool[T]) TakeLater() (T, bool) {
	var zero T
	if p == nil {
		return zero, false
	}
	p.mu.Lock()
	if n := len(p.items); n > 0 {
		r := p.items[n-1]
		p.items[n-1] = zero
		p.items = p.items[:n-1]
		p.mu.Unlock()
		p.taken.Add(1)
		return r, true
	}
	p.mu.Unlock()
	p.missed.Add(1)
	return zero, false
}

// Refill has the pool make what it lacks.
func (p *Pool[T]) Refill() {
	if p == nil {
		return
	}
	p.mu.Lock()
	if len(p.items) < p.max {
		p.cond.Signal()
	}
	p.mu.Unlock()
}

// Stats reports the pool (a nil pool: zeros).
func (p *Pool[T]) Stats() fabric.ReadyStats {
	if p == nil {
		return fabric.ReadyStats{}
	}
	p.mu.Lock()
	n := len(p.items)
	p.mu.Unlock()
	return fabric.ReadyStats{Size: p.max, Ready: n, Taken: p.taken.Load(), Missed: p.missed.Load()}
}

// Close stops the refill and frees what nobody took.
func (p *Pool[T]) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.stop)
	p.cond.Broadcast()
	p.mu.Unlock()
	<-p.done
	for _, r := range p.items {
		p.free(r)
	}
	p.items = nil
}

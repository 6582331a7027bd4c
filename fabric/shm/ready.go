package shm

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// readyPool holds domains made before anyone dials (fabric.Options.Ready):
// a join takes one instead of creating, sizing, sealing and mapping a
// memfd on its critical path, and a goroutine makes the next one
// meanwhile. Each domain is a fresh memfd that goes to exactly one
// connection and is never returned, so a client that takes one and
// vanishes leaves nothing for the next. A full pool costs no CPU (the
// goroutine waits until a join takes one), and per domain one memfd
// descriptor, its mapping's address space and the one page of its table
// header written (the rest of the file is sparse).
type readyPool struct {
	size int64 // each domain's DomainSize
	max  int

	mu     sync.Mutex
	cond   *sync.Cond // the pool is no longer full, or closed
	ds     []*domain
	closed bool
	stop   chan struct{}
	done   chan struct{}

	taken, missed atomic.Uint64
}

// readyRetry is how long the pool waits after it failed to make a domain
// (out of memory or descriptors) before it tries again; joins meanwhile
// make their own and report why they cannot.
const readyRetry = 100 * time.Millisecond

// newReadyPool makes the pool's first domain at once, so a DomainSize no
// domain can have fails the listener instead of every refill.
func newReadyPool(n int, size int64) (*readyPool, error) {
	d, err := newDomain(size)
	if err != nil {
		return nil, err
	}
	p := &readyPool{size: size, max: n, ds: []*domain{d}, stop: make(chan struct{}), done: make(chan struct{})}
	p.cond = sync.NewCond(&p.mu)
	go p.fill()
	return p, nil
}

// fill keeps the pool full until close.
func (p *readyPool) fill() {
	defer close(p.done)
	for {
		p.mu.Lock()
		for !p.closed && len(p.ds) >= p.max {
			p.cond.Wait()
		}
		closed := p.closed
		p.mu.Unlock()
		if closed {
			return
		}
		d, err := newDomain(p.size)
		if err != nil {
			select {
			case <-time.After(readyRetry):
				continue
			case <-p.stop:
				return
			}
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			d.close()
			return
		}
		p.ds = append(p.ds, d)
		p.mu.Unlock()
	}
}

// take hands a prepared domain over for good, or makes one when none is
// ready (a nil pool always makes one).
func (p *readyPool) take(size int64) (*domain, error) {
	if p == nil {
		return newDomain(size)
	}
	p.mu.Lock()
	if n := len(p.ds); n > 0 {
		d := p.ds[n-1]
		p.ds[n-1] = nil
		p.ds = p.ds[:n-1]
		p.cond.Signal()
		p.mu.Unlock()
		p.taken.Add(1)
		return d, nil
	}
	p.mu.Unlock()
	p.missed.Add(1)
	return newDomain(size)
}

func (p *readyPool) stats() fabric.ReadyStats {
	if p == nil {
		return fabric.ReadyStats{}
	}
	p.mu.Lock()
	n := len(p.ds)
	p.mu.Unlock()
	return fabric.ReadyStats{Size: p.max, Ready: n, Taken: p.taken.Load(), Missed: p.missed.Load()}
}

// close stops the refill and frees what nobody took.
func (p *readyPool) close() {
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
	for _, d := range p.ds {
		d.close()
	}
	p.ds = nil
}

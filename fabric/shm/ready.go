package shm

import "github.com/jakiro-kv/jakiro/fabric/internal/readypool"

// The listener's pool of domains made before anyone dials
// (fabric.Options.Ready, readypool): a join takes one instead of
// creating, sizing, sealing and mapping a memfd on its critical path, and
// a goroutine makes the next one once the join's accept is sent. Each
// domain is a fresh memfd that goes to exactly one connection and is
// never returned, so a client that takes one and vanishes leaves nothing
// for the next. A full pool costs no CPU, and per domain one memfd
// descriptor, its mapping's address space and the one page of its table
// header written (the rest of the file is sparse).

// The listener keeps a second pool of the same kind, of domains it lends
// to dialers that borrow theirs (fabric.Options.BorrowDomain): the same
// fresh memfd each, made and mapped here, so the join of such a dialer
// makes no memory on either side. Each goes to one dialer, never back.

// newReadyPool makes the pool's first domain at once, so a DomainSize no
// domain can have fails the listener instead of every refill.
func newReadyPool(n int, size int64) (*readypool.Pool[*domain], error) {
	d, err := newDomain(size)
	if err != nil {
		return nil, err
	}
	return readypool.New(readypool.Config[*domain]{
		Size: n,
		Make: func() (*domain, error) { return newDomain(size) },
		Free: func(d *domain) { d.close() },
	}, d), nil
}

// takeDomain hands a prepared domain over for good, or makes one when
// none is ready (a nil pool always makes one). The pool makes the next
// when the handshake has sent its accept, or is closed (setup).
func takeDomain(p *readypool.Pool[*domain], size int64) (*domain, error) {
	if d, ok := p.TakeLater(); ok {
		return d, nil
	}
	return newDomain(size)
}

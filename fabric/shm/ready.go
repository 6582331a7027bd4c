package shm

import "github.com/jakiro-kv/jakiro/fabric/internal/readypool"

// The listener's pool of connections' domains made before anyone dials
// (fabric.Options.Ready, readypool): a join takes a pair, the acceptor's
// domain and the one it lends a dialer that borrows its own
// (fabric.Options.BorrowDomain), instead of creating, sizing, sealing and
// mapping memfds on its critical path, and one goroutine makes the next
// pair once the join's accept is sent (one wake-up a join, not one a
// domain). Each domain is a fresh memfd that goes to exactly one
// connection and is never returned, so a client that takes one and
// vanishes leaves nothing for the next. A full pool costs no CPU, and per
// domain one memfd descriptor, its mapping's address space and the one
// page of its table header written (the rest of the file is sparse). A
// dialer that brings its own domain leaves the pair's lent one unused
// (freed at once).
type readyPair struct{ own, lent *domain }

func (p readyPair) close() {
	p.own.close()
	p.lent.close()
}

// newReadyPool makes the pool's first pair at once, so a DomainSize no
// domain can have fails the listener instead of every refill.
func newReadyPool(n int, size int64) (*readypool.Pool[readyPair], error) {
	make := func() (readyPair, error) {
		own, err := newDomain(size)
		if err != nil {
			return readyPair{}, err
		}
		lent, err := newDomain(size)
		if err != nil {
			own.close()
			return readyPair{}, err
		}
		return readyPair{own, lent}, nil
	}
	first, err := make()
	if err != nil {
		return nil, err
	}
	return readypool.New(readypool.Config[readyPair]{
		Size: n,
		Make: make,
		Free: readyPair.close,
	}, first), nil
}

// takeDomains hands a prepared pair over for good, or makes what is
// needed when none is ready (a nil pool always makes them): the
// acceptor's domain, and one to lend if lend. The pool makes the next
// when the handshake has sent its accept, or is closed (setup).
func takeDomains(p *readypool.Pool[readyPair], size int64, lend bool) (own, lent *domain, err error) {
	if r, ok := p.TakeLater(); ok {
		if !lend {
			r.lent.close()
			r.lent = nil
		}
		return r.own, r.lent, nil
	}
	if own, err = newDomain(size); err != nil || !lend {
		return own, nil, err
	}
	if lent, err = newDomain(size); err != nil {
		own.close()
		return nil, nil, err
	}
	return own, lent, nil
}

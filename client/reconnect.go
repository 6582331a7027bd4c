package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// Redial backoff: the first attempt follows a loss quickly (a server
// restarted by a supervisor is back in milliseconds), later ones double
// up to backoffMax, so a server that comes back is served again within
// about backoffMax plus one dial.
const (
	backoffMin   = 10 * time.Millisecond
	backoffMax   = 400 * time.Millisecond
	redialBound  = 3 * time.Second // one redial attempt, handshake included
	backoffScale = 2
)

// backoff is the jittered wait before redial attempt n (0-based): a
// uniform draw in [d/2, d] with d = backoffMin·2ⁿ capped at backoffMax,
// so many clients of one restarted server do not redial in lockstep.
func backoff(n int) time.Duration {
	d := backoffMin
	for i := 0; i < n && d < backoffMax; i++ {
		d *= backoffScale
	}
	d = min(d, backoffMax)
	return d/2 + rand.N(d/2+1)
}

// server is one server of a Client: its live connection (nil while
// down) and the background redial that replaces a lost one. Operations
// read cur without a lock; everything else is under mu.
type server struct {
	addr string
	cfg  config
	g    *pollGroup // drives this server's connections
	// laneSet: the server's other connections (lanes.go); nil in a lane.
	laneSet    *laneSet
	laneDialAt atomic.Int64 // a lane's: no dial before this time (ns)
	everUp     atomic.Bool  // connected once: from then on redial keeps it up
	cur        atomic.Pointer[conn]
	ctx        context.Context // canceled by close: ends the redial goroutines
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	unwatch    func() bool // stops the watch of cur (attachLocked); nil if none

	mu         sync.Mutex
	closed     bool
	down       error // why cur is nil; nil while connected
	lost       error // the last loss, for callers that saw it happen
	retired    Counters
	reconnects int
}

func newServer(addr string, cfg config) *server {
	base := nextGroup.Add(1)
	s := newLane(addr, cfg, groupFor(base, 0))
	if n := cfg.lanes(); n > 1 {
		s.laneSet = &laneSet{lanes: make([]*server, n-1)}
		for k := range s.laneSet.lanes {
			s.laneSet.lanes[k] = newLane(addr, cfg, groupFor(base, k+1))
		}
	}
	return s
}

func newLane(addr string, cfg config, g *pollGroup) *server {
	s := &server{addr: addr, cfg: cfg, g: g}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// each calls f for the server and each of its lanes.
func (s *server) each(f func(l *server)) {
	f(s)
	if s.laneSet != nil {
		for _, l := range s.laneSet.lanes {
			f(l)
		}
	}
}

// connect dials once. On failure the server stays down; redialLater
// keeps trying.
func (s *server) connect(ctx context.Context) error {
	cn, err := dial(ctx, s.addr, s.cfg, s.g)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.down = &unavailableError{addr: s.addr, dial: err}
		return err
	}
	if s.closed { // a lane dialled in the background as the client closed
		cn.close()
		return ErrClosed
	}
	s.attachLocked(cn)
	return nil
}

// redialLater starts redialing a server that is down.
func (s *server) redialLater() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed && s.cur.Load() == nil {
		s.wg.Add(1)
		go s.redial()
	}
}

// attachLocked makes cn the live connection and watches it: a peer that
// dies ends cn, and the server redials before anyone calls. The watch is
// a function the connection starts when it ends (fabric.AfterDone): no
// goroutine waits for it, so a join starts none and Close wakes none.
func (s *server) attachLocked(cn *conn) {
	s.everUp.Store(true)
	s.cur.Store(cn)
	s.down = nil
	s.wg.Add(1)
	s.unwatch = fabric.AfterDone(cn.fc, func() {
		defer s.wg.Done()
		s.lose(cn, fabric.ErrPeerGone)
	})
}

// unwatchLocked stops the watch of the live connection, if it has not
// fired: its goroutine will not run, so it is done here.
func (s *server) unwatchLocked() {
	if s.unwatch != nil && s.unwatch() {
		s.wg.Done()
	}
	s.unwatch = nil
}

// lose retires cn after it failed (cause, unless the engine knows
// better) and starts redialing. Only the first report of a loss counts.
func (s *server) lose(cn *conn, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.cur.Load() != cn {
		return
	}
	if err := cn.err(); err != nil {
		cause = err
	}
	s.cur.Store(nil)
	s.retired = s.retired.Add(cn.counters())
	cn.close() // its waiters fail now; their callers see s.down
	s.lost = &unavailableError{addr: s.addr, lost: cause}
	s.down = s.lost
	s.wg.Add(1)
	go s.redial()
}

// redial dials with backoff until it connects or the client closes.
func (s *server) redial() {
	defer s.wg.Done()
	for n := 0; ; n++ {
		t := time.NewTimer(backoff(n))
		select {
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
			return
		}
		ctx, cancel := context.WithTimeout(s.ctx, redialBound)
		cn, err := dial(ctx, s.addr, s.cfg, s.g)
		cancel()
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			if cn != nil {
				cn.close()
			}
			return
		}
		if err != nil {
			u := &unavailableError{addr: s.addr, dial: err}
			if s.lost != nil {
				u.lost = s.lost.(*unavailableError).lost
			}
			s.down = u
			s.mu.Unlock()
			continue
		}
		s.reconnects++
		s.attachLocked(cn)
		s.mu.Unlock()
		return
	}
}

// conn is the live connection, or the error that says why there is none.
func (s *server) conn() (*conn, error) {
	if cn := s.cur.Load(); cn != nil {
		return cn, nil
	}
	return s.connSlow()
}

func (s *server) connSlow() (*conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if cn := s.cur.Load(); cn != nil {
		return cn, nil
	}
	return nil, s.down
}

// opErr turns an operation's error on cn into what its caller gets: the
// server's answers and context errors as they are; a connection that
// failed under it becomes ErrUnavailable wrapping ErrConnLost and the
// cause, and a redial starts.
func (s *server) opErr(cn *conn, err error) error {
	switch err {
	case ErrNotFound, ErrTooLarge, ErrNoMemory, ErrBadKey, ErrBadRequest:
		return err // the server answered: no need to look at the connection
	}
	if cn.err() == nil && s.cur.Load() == cn {
		return err
	}
	s.lose(cn, err)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return s.lost
}

// close disconnects every lane for good and waits for the background
// goroutines.
func (s *server) close() error {
	var errs []error
	s.each(func(l *server) { errs = append(errs, l.closeLane()) })
	return errors.Join(errs...)
}

func (s *server) closeLane() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.cancel()
	s.unwatchLocked()
	cn := s.cur.Swap(nil)
	var err error
	if cn != nil {
		s.retired = s.retired.Add(cn.counters())
		err = cn.close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// counters are the server's counters over all its connections.
func (s *server) counters() Counters {
	var sum Counters
	s.each(func(l *server) {
		l.mu.Lock()
		sum = sum.Add(l.retired)
		if cn := l.cur.Load(); cn != nil {
			sum = sum.Add(cn.counters())
		}
		l.mu.Unlock()
	})
	return sum
}

// unavailableError says which server is down and why: the connection
// was lost (lost), a dial failed (dial), or both while redialing.
type unavailableError struct {
	addr string
	lost error
	dial error
}

func (e *unavailableError) Error() string {
	msg := "jakiro: server " + e.addr + " unavailable: "
	switch {
	case e.lost != nil && e.dial != nil:
		return msg + "connection lost (" + e.lost.Error() + "); redial: " + e.dial.Error()
	case e.lost != nil:
		return msg + "connection lost: " + e.lost.Error()
	}
	return msg + e.dial.Error()
}

func (e *unavailableError) Unwrap() []error {
	errs := []error{ErrUnavailable}
	if e.lost != nil {
		errs = append(errs, ErrConnLost, e.lost)
	}
	if e.dial != nil {
		errs = append(errs, e.dial)
	}
	return errs
}

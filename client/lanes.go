package client

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A Client used by many goroutines spreads them over several connections
// to each server, its lanes, each driven in a poll group of its own, so
// callers on different cores seldom meet on one connection. A caller
// takes the lane of the P it runs on: a token kept per P in a sync.Pool
// names it, so choosing costs no shared write. Lane 0 is dialled by Dial;
// the others when a caller first needs one while lane 0 has calls in
// flight (meanwhile, and while one is down, its callers use lane 0), so a
// Client used by one goroutine at a time keeps one connection.
type laneSet struct {
	lanes []*server // lanes 1..n-1 of this server (lane 0 is the server itself)
	toks  sync.Pool // *laneToken
	next  atomic.Uint32
}

type laneToken struct{ k int }

// laneRedialAfter is how long a lane whose dial failed is left alone
// before a caller tries it again.
const laneRedialAfter = 5 * time.Second

// lane is the connection-level server a caller on this P should use.
func (s *server) lane() *server {
	ls := s.laneSet
	t, _ := ls.toks.Get().(*laneToken)
	if t == nil {
		t = &laneToken{k: int(ls.next.Add(1)-1) % (len(ls.lanes) + 1)}
	}
	ls.toks.Put(t)
	if t.k == 0 {
		return s
	}
	l := ls.lanes[t.k-1]
	if l.cur.Load() != nil {
		return l
	}
	if cn := s.cur.Load(); cn != nil && cn.listed.Load() {
		// Lane 0 has calls in flight: callers meet there, so the lane is
		// worth its connection. (A Client used by one goroutine at a
		// time never gets here, wherever the goroutine runs.)
		l.dialLane()
	}
	return s
}

// dialLane dials a lane in the background, unless a dial is under way or
// failed recently, or the lane was up once (then its redial brings it back).
func (s *server) dialLane() {
	if s.everUp.Load() {
		return
	}
	now := time.Now().UnixNano()
	if at := s.laneDialAt.Load(); at > now || !s.laneDialAt.CompareAndSwap(at, now+int64(laneRedialAfter)) {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, redialBound)
		defer cancel()
		s.connect(ctx) // on failure the lane stays down; its callers use lane 0
	}()
}

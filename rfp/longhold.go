package rfp

import (
	"sync/atomic"
	"time"
)

// Long values held for clients: a request sent in parts is joined in
// memory the session owns, and a long response is copied there until its
// pieces are fetched. Both are bounded per client and in time, so that
// clients holding them open cost only themselves:
//   - each session has its own share (LongShare of the server's largest
//     value), used first; beyond it, the listener's pool (LongBudget),
//     shared by all, first come;
//   - a long value that makes no progress (no part, no piece fetched) for
//     DefaultLongHold is dropped: its join or piece requests get
//     StatusBadRequest, and only that client sees it.
//
// An honest client holds a long value for the microseconds its parts or
// pieces take, and one long request and one long response always fit its
// share: another client's holds never make it fail.

// DefaultLongBudget is the listener's pool of long values held beyond
// the clients' shares.
const DefaultLongBudget = 64 << 20

// DefaultLongHold is how long a long value may be held without progress.
const DefaultLongHold = 2 * time.Second

// minLongShare is the smallest share a client gets, whatever the
// largest value.
const minLongShare = 256 << 10

// LongShare is the bytes of long values each client may hold of its own
// when the largest value is maxValue: room for a request in parts and a
// response in pieces of the largest size.
func LongShare(maxValue int) int {
	return max(2*(maxValue+StoreExtraLen), minLongShare)
}

// longBudget is a count of bytes left to hold.
type longBudget struct {
	left atomic.Int64
}

func newLongBudget(n int64) *longBudget {
	b := &longBudget{}
	b.left.Store(n)
	return b
}

func (b *longBudget) take(n int) bool {
	if b == nil {
		return true
	}
	if b.left.Add(-int64(n)) < 0 {
		b.left.Add(int64(n))
		return false
	}
	return true
}

func (b *longBudget) give(n int) {
	if b != nil {
		b.left.Add(int64(n))
	}
}

// takeLong takes n bytes from the client's share, else from the pool;
// pool says which, for giveLong.
func (s *Session) takeLong(n int) (pool, ok bool) {
	if s.share.take(n) {
		return false, true
	}
	return true, s.long.take(n)
}

func (s *Session) giveLong(n int, pool bool) {
	if pool {
		s.long.give(n)
	} else {
		s.share.give(n)
	}
}

// heldNow notes progress on p's long values: the hold's clock restarts,
// or stops where nothing is held any more.
func (s *Session) heldNow(p int) {
	ring := &s.rings[p]
	if ring.in != nil && !ring.joined || len(ring.out) > 0 {
		ring.longAt = ring.now
	} else {
		ring.longAt = 0
	}
}

// expireLong drops p's long values held past the session's hold.
func (s *Session) expireLong(p int) {
	s.longExpired.Add(1)
	s.dropLong(p)
	s.rings[p].longAt = 0
}

// LongExpired is the count of long values dropped because the client
// left them without progress for DefaultLongHold.
func (s *Session) LongExpired() uint64 { return s.longExpired.Load() }

package rfp

import (
	"testing"
)

// A client's long values come out of its own share first: with the
// listener's pool empty, one long request and one long response still fit.
func TestLongShareBeforePool(t *testing.T) {
	l, err := NewLayout(1, 8, 64<<10, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	srv := newFakeServer(t, l, make([]byte, l.Size()))
	s := srv.sess
	s.long = newLongBudget(0) // every other client took the pool
	val := make([]byte, l.MaxValue)
	if err := s.keepLong(0, val, 56); err != nil {
		t.Fatalf("a long response within the share: %v", err)
	}
	if pool, ok := s.takeLong(l.MaxValue + StoreExtraLen); !ok || pool {
		t.Fatalf("a long request beside it: pool %v ok %v, want the share", pool, ok)
	}
	if _, ok := s.takeLong(LongShare(l.MaxValue)); ok {
		t.Fatal("past the share with the pool empty, a hold was granted")
	}
}

// A long value held without progress for the hold is dropped at the
// next Poll, and its bytes go back; progress restarts the clock.
func TestLongHoldExpires(t *testing.T) {
	l, err := NewLayout(1, 8, 64<<10, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	srv := newFakeServer(t, l, make([]byte, l.Size()))
	s := srv.sess
	w := &wrapReader{t: t, srv: srv, l: l, ring: srv.grant[l.ReqBase(0) : l.ReqBase(0)+l.ReqRing]}
	full := s.share.left.Load()
	start := int64(1e9)
	// A request in parts: the first part at start.
	part := make([]byte, 1000)
	n := PutRequest(w.ring, ReqHeader{Seq: 1, Op: OpPut, Flags: FlagPart, Total: 5000}, nil, part)
	var r Request
	if s.Poll(0, start, &r) {
		t.Fatal("a part was returned as a request")
	}
	if got := full - s.share.left.Load(); got != 5000 {
		t.Fatalf("share holds %d bytes, want 5000", got)
	}
	// Polls within the hold keep it.
	if s.Poll(0, start+s.longHold, &r); s.LongExpired() != 0 || s.rings[0].in == nil {
		t.Fatal("dropped within the hold")
	}
	// A second part is progress: the clock restarts.
	PutRequest(w.ring[n:], ReqHeader{Seq: 2, Op: OpPut, Flags: FlagPart, Total: 5000}, nil, part)
	s.Poll(0, start+s.longHold, &r)
	if s.Poll(0, start+s.longHold+s.longHold/2, &r); s.LongExpired() != 0 {
		t.Fatal("dropped after progress")
	}
	// No progress for longer than the hold: dropped, bytes back.
	s.Poll(0, start+2*s.longHold+1, &r)
	if s.LongExpired() != 1 || s.rings[0].in != nil {
		t.Fatalf("expired %d, parts kept %v", s.LongExpired(), s.rings[0].in != nil)
	}
	if s.share.left.Load() != full {
		t.Fatalf("share %d after the drop, want %d", s.share.left.Load(), full)
	}
}

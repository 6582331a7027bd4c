package rfp

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"
)

// The request-ring reader against wrap markers a client may write
// anywhere: every step of the read position moves forward (to a new
// record, or to the next lap's start past a marker) or breaks the ring,
// and Poll always returns.

// wrapReader is a Session whose partition 0 ring the test writes as a
// client would, with the reader's position set where a test wants it.
type wrapReader struct {
	t    *testing.T
	srv  *fakeServer
	l    Layout
	ring []byte // partition 0's request ring in the grant
}

func newWrapReader(t *testing.T) *wrapReader {
	l, err := NewLayout(1, 16, 4096, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	srv := newFakeServer(t, l, make([]byte, l.Size()))
	return &wrapReader{t: t, srv: srv, l: l, ring: srv.grant[l.ReqBase(0) : l.ReqBase(0)+l.ReqRing]}
}

// at puts the reader at position pos expecting sequence seq.
func (w *wrapReader) at(pos uint64, seq uint32) {
	ring := &w.srv.sess.rings[0]
	ring.rpos, ring.next = pos, seq
}

func (w *wrapReader) marker(off int, seq uint32) { putReqWrap(w.ring[off:], seq) }

func (w *wrapReader) get(off int, seq uint32, key string) int {
	return PutRequest(w.ring[off:], ReqHeader{Seq: seq, Op: OpGet, Budget: 64}, []byte(key), nil)
}

// poll runs Poll and fails the test if it does not return.
func (w *wrapReader) poll(r *Request) bool {
	w.t.Helper()
	done := make(chan bool, 1)
	go func() { done <- w.srv.sess.Poll(0, w.srv.now, r) }()
	select {
	case ok := <-done:
		return ok
	case <-time.After(5 * time.Second):
		w.t.Fatalf("Poll did not return in 5 s (read position %d)", w.srv.sess.rings[0].rpos)
		return false
	}
}

func TestPollWrapMarkers(t *testing.T) {
	ringLen := uint64(newWrapReader(t).l.ReqRing)
	for _, lap := range []uint64{0, 1, 7} {
		for off := 0; off+reqMarkerLen <= int(ringLen); off += recAlign {
			w := newWrapReader(t)
			pos := lap*ringLen + uint64(off)
			const seq = 9
			w.at(pos, seq)
			w.marker(off, seq)
			var r Request
			if w.poll(&r) {
				t.Fatalf("offset %d: a wrap marker was returned as a request", off)
			}
			rpos := w.srv.sess.rings[0].rpos
			if off == 0 {
				// A marker at a lap's start: the ring is broken, the
				// position stays, and it stays broken.
				if err := w.srv.sess.Broken(0); !errors.Is(err, ErrRingProtocol) {
					t.Fatalf("lap %d offset 0: Broken %v, want ErrRingProtocol", lap, err)
				}
				if rpos != pos {
					t.Fatalf("lap %d offset 0: read position moved to %d", lap, rpos)
				}
				w.get(0, seq, "k")
				if w.poll(&r) {
					t.Fatal("a broken ring served a request")
				}
				continue
			}
			if err := w.srv.sess.Broken(0); err != nil {
				t.Fatalf("offset %d: %v", off, err)
			}
			if want := (lap + 1) * ringLen; rpos != want {
				t.Fatalf("offset %d: read position %d after the marker, want the next lap's start %d", off, rpos, want)
			}
			// The same marker repeated at the next lap's start (the ring's
			// offset 0) breaks the ring instead of going round again.
			if off/recAlign%8 == 1 {
				w.marker(0, seq)
				if w.poll(&r) || !errors.Is(w.srv.sess.Broken(0), ErrRingProtocol) {
					t.Fatalf("offset %d: a repeated marker at the lap's start did not break the ring", off)
				}
				continue
			}
			// An honest record there is served.
			w.get(0, seq, "k")
			if !w.poll(&r) || r.Seq != seq || string(r.Key) != "k" || r.at != rpos {
				t.Fatalf("offset %d: the record after the marker: %+v", off, r)
			}
		}
	}
}

// TestPollBatchWrapAtLapStart: a batch stops at a marker at a lap's
// start; the next Poll breaks the ring.
func TestPollBatchWrapAtLapStart(t *testing.T) {
	w := newWrapReader(t)
	ringLen := w.l.ReqRing
	at := ringLen - reqRecLen(1, 0) - reqMarkerLen // a record, then a marker at the lap's end
	n := w.get(at, 5, "a")
	w.marker(at+n, 6)
	w.marker(0, 6)
	w.at(uint64(at), 5)
	rs := make([]Request, 4)
	done := make(chan int, 1)
	go func() { done <- w.srv.sess.PollBatch(0, 0, rs) }()
	select {
	case got := <-done:
		if got != 1 {
			t.Fatalf("PollBatch: %d requests, want 1", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("PollBatch did not return")
	}
	if err := w.srv.sess.Respond(0, &rs[0], StatusOK, nil); err != nil {
		t.Fatal(err)
	}
	var r Request
	if w.poll(&r) || !errors.Is(w.srv.sess.Broken(0), ErrRingProtocol) {
		t.Fatal("the marker at the lap's start did not break the ring")
	}
}

// FuzzRequestRingReader writes what the fuzzer says into a request ring
// (wrap markers and records, of the expected sequence number or near it,
// at any offset, repeated) and polls after each write. Checked against
// the reader's model: Poll returns; the read position never moves back;
// a request returned carries the sequence expected, starts where the
// reader stood or at a later lap's start reached past a marker, and lies
// in the ring; a broken ring stays broken and serves nothing.
func FuzzRequestRingReader(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{1, 0, 0, 1, 0, 0, 0, 0})
	f.Add([]byte{1, 255, 1, 0, 0, 0, 0, 0, 2, 0, 0, 0})
	f.Add([]byte{2, 40, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		w := newWrapReader(t)
		ringLen := w.l.ReqRing
		w.at(0, 1)
		broken := false
		for len(data) >= 4 && !t.Failed() {
			kind, off, dseq := data[0]%3, int(binary.LittleEndian.Uint16(data[1:]))*recAlign%ringLen, uint32(data[3]%3)
			data = data[4:]
			ring := &w.srv.sess.rings[0]
			seq := ring.next + dseq - 1 // one before, the one expected, one after
			switch kind {
			case 0: // nothing written: just poll
			case 1:
				if off+reqMarkerLen <= ringLen {
					w.marker(off, seq)
				}
			case 2:
				key := string(rune('a' + off%26))
				if off+RequestLen([]byte(key), nil) <= ringLen {
					w.get(off, seq, key)
				}
			}
			before, expect := ring.rpos, ring.next
			var r Request
			ok := w.poll(&r)
			after := ring.rpos
			if after < before {
				t.Fatalf("read position moved back: %d -> %d", before, after)
			}
			if broken {
				if ok || after != before {
					t.Fatal("a broken ring moved or served")
				}
				continue
			}
			if w.srv.sess.Broken(0) != nil {
				broken = true
				continue
			}
			if !ok {
				continue
			}
			if r.Op == 0 {
				t.Fatalf("a malformed record reported without StuckTimeout: %+v", r)
			}
			if r.Seq != expect || r.at < before || (r.at != before && r.at%uint64(ringLen) != 0) {
				t.Fatalf("request %+v, reader was at %d expecting %d", r, before, expect)
			}
			if off := int(r.at % uint64(ringLen)); off+r.len > ringLen {
				t.Fatalf("request %+v runs past the ring", r)
			}
			if err := w.srv.sess.Respond(0, &r, StatusNotFound, nil); err != nil {
				t.Fatal(err)
			}
			if ring.rpos <= r.at {
				t.Fatalf("Respond left the read position at %d, the request at %d", ring.rpos, r.at)
			}
		}
	})
}

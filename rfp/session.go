package rfp

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// Session is the server's side of one client: the grant (request and
// response rings for every partition) and the connection. Each partition's
// methods (Poll, ResponseValue, Respond) must be called only by that
// partition's goroutine; rings of different partitions share nothing.
type Session struct {
	ID     uint32
	conn   fabric.Conn
	pump   fabric.Pumper // conn's, where its NIC is a host thread
	grant  *fabric.Region
	mem    []byte
	layout Layout
	rings  []sessionRing

	replyMu      sync.Mutex // serialises reply-mode Post/Poll across partitions
	replyComps   [16]fabric.Completion
	replyTimeout time.Duration
	closed       atomic.Bool
	release      func() // gives the listener's client slot back, once
}

type sessionRing struct {
	next       uint32 // sequence expected next
	stuckSince int64  // when the expected slot was first seen invalid
	replyTo    fabric.Desc
	haveReply  bool
	replies    []fabric.Op // reply WRITEs staged by Respond, posted by FlushReplies
	_          [64]byte    // keep partitions' rings on separate cache lines
}

// StuckTimeout is how long a slot may show the expected sequence number
// with a bad checksum or impossible lengths before the server answers it
// as malformed. Honest WRITEs land within microseconds.
const StuckTimeout = int64(1e9)

func newSession(id uint32, conn fabric.Conn, grant *fabric.Region, l Layout, replyTimeout time.Duration, release func()) *Session {
	s := &Session{ID: id, conn: conn, grant: grant, mem: grant.Bytes(), layout: l,
		rings: make([]sessionRing, l.Partitions), replyTimeout: replyTimeout, release: release}
	for p := range s.rings {
		s.rings[p].next = 1
		s.rings[p].replies = make([]fabric.Op, 0, l.Slots)
	}
	s.pump, _ = conn.(fabric.Pumper)
	return s
}

// Pump has the connection apply what the client has sent so far, on the
// caller's thread, where the fabric's NIC is a host thread (tcp): a
// partition waiting on a busy client takes its next request without a
// wake-up of the fabric's own thread. Elsewhere it does nothing.
// It reports whether the fabric has such a NIC (whether a new look at
// the rings may find more).
func (s *Session) Pump() bool {
	if s.pump == nil {
		return false
	}
	s.pump.Pump()
	return true
}

// Unpump says the caller stops pumping (fabric.Pumper.Release).
func (s *Session) Unpump() {
	if s.pump != nil {
		s.pump.Release()
	}
}

// Layout is the session's geometry.
func (s *Session) Layout() Layout { return s.layout }

// Done is closed when the client's connection ends.
func (s *Session) Done() <-chan struct{} { return s.conn.Done() }

// Err says why the connection ended.
func (s *Session) Err() error { return s.conn.Err() }

// Close ends the connection and frees the grant. Call it only after every
// partition goroutine has stopped touching the session.
// BellSource is the name this session's rings carry (Listener.TakeRingers),
// -1 where the fabric names none.
func (s *Session) BellSource() int {
	if rs, ok := s.conn.(fabric.RingSource); ok {
		return rs.BellSource()
	}
	return -1
}

func (s *Session) Close() error { return s.CloseBy(time.Time{}) }

// CloseBy is Close, with the connection's wait for what it owes the
// client (fabric.CloseBy) ending by deadline; zero: the fabric's own
// bound.
func (s *Session) CloseBy(deadline time.Time) error {
	if s.closed.Swap(true) {
		return nil
	}
	var err error
	if deadline.IsZero() {
		err = s.conn.Close()
	} else {
		err = fabric.CloseBy(s.conn, deadline)
	}
	s.grant.Close()
	if s.release != nil {
		s.release()
	}
	return err
}

// Poll looks at partition p's next request slot. It returns true with r
// filled when a request is there. A slot that stayed malformed for
// StuckTimeout is returned with r.Op == 0, to be answered StatusBadRequest.
// now is a monotonic clock in nanoseconds.
func (s *Session) Poll(p int, now int64, r *Request) bool {
	ring := &s.rings[p]
	l := s.layout
	off := l.ReqOff(p, SlotOf(ring.next, l.Slots))
	switch ParseRequest(s.mem[off:off+l.ReqSlot], ring.next, l.MaxValue, r) {
	case SlotReady:
		ring.stuckSince = 0
		return true
	case SlotEmpty:
		return false
	}
	if ring.stuckSince == 0 {
		ring.stuckSince = now
		return false
	}
	if now-ring.stuckSince < StuckTimeout {
		return false
	}
	ring.stuckSince = 0
	*r = Request{Seq: ring.next}
	return true
}

// PollBatch fills rs with the consecutive ready requests of partition p's
// ring, starting at the next one, without consuming them: the caller
// answers them in order with ResponseValue/Respond (rs[i] is answered by
// the i-th Respond). Seeing several at once lets a server overlap their
// memory accesses. A malformed slot is reported as Poll does, alone.
func (s *Session) PollBatch(p int, now int64, rs []Request) int {
	if len(rs) == 0 || !s.Poll(p, now, &rs[0]) {
		return 0
	}
	if rs[0].Op == 0 {
		return 1
	}
	ring := &s.rings[p]
	l := s.layout
	n := 1
	for ; n < len(rs) && n < l.Slots; n++ {
		seq := ring.next + uint32(n)
		off := l.ReqOff(p, SlotOf(seq, l.Slots))
		if ParseRequest(s.mem[off:off+l.ReqSlot], seq, l.MaxValue, &rs[n]) != SlotReady {
			break
		}
	}
	return n
}

// ResponseValue is where partition p puts the value of the response to the
// request Poll returned, before Respond.
func (s *Session) ResponseValue(p int) []byte {
	l := s.layout
	off := l.RespOff(p, SlotOf(s.rings[p].next, l.Slots))
	return ResponseValue(s.mem[off : off+l.RespSlot])
}

// Respond seals the response (n value bytes already in ResponseValue) in
// server memory and moves to the next slot. If the request asked for a
// reply it stages the WRITE of the response into the client's memory;
// FlushReplies posts what Respond staged, all at once (one send where the
// fabric is a socket), and must follow each batch of Responds.
func (s *Session) Respond(p int, reply bool, st Status, n int) error {
	ring := &s.rings[p]
	l := s.layout
	seq := ring.next
	sl := SlotOf(seq, l.Slots)
	off := l.RespOff(p, sl)
	size := SealResponse(s.mem[off:off+l.RespSlot], seq, st, n)
	ring.next++
	if !reply {
		return nil
	}
	if !ring.haveReply {
		d, ok := ParseControl(s.mem[:ControlSize])
		if !ok || d.Len < uint64(l.Size()) {
			return errors.New("rfp: client asked for a reply but gave no valid local region")
		}
		ring.replyTo, ring.haveReply = d, true
	}
	if len(ring.replies) == cap(ring.replies) {
		// More than a ring of Responds without a flush: post these first.
		if err := s.FlushReplies(p); err != nil {
			return err
		}
	}
	ring.replies = append(ring.replies, fabric.Op{Kind: fabric.OpWrite, ID: uint64(p), Local: s.grant, LocalOff: off,
		Len: size, Remote: ring.replyTo, RemoteOff: uint64(off)})
	return nil
}

// FlushReplies posts the reply WRITEs Respond staged for partition p.
func (s *Session) FlushReplies(p int) error {
	ring := &s.rings[p]
	if len(ring.replies) == 0 {
		return nil
	}
	defer func() { ring.replies = ring.replies[:0] }()
	s.replyMu.Lock()
	defer s.replyMu.Unlock()
	var deadline time.Time
	for {
		err := s.conn.Post(ring.replies)
		if err == nil {
			break
		}
		if !errors.Is(err, fabric.ErrQueueFull) {
			return err
		}
		// The client's fabric is not taking our WRITEs: wait for room,
		// but only so long, or one client would hold the partition.
		if deadline.IsZero() {
			deadline = time.Now().Add(s.replyTimeout)
		} else if time.Now().After(deadline) {
			return fmt.Errorf("%w: no room for a reply WRITE in %v", ErrReplyStalled, s.replyTimeout)
		}
		if _, err := s.conn.Poll(s.replyComps[:]); err != nil {
			return err
		}
	}
	n2, err := s.conn.Poll(s.replyComps[:])
	if err != nil {
		return err
	}
	for _, c := range s.replyComps[:n2] {
		if c.Err != nil {
			return fmt.Errorf("rfp: reply WRITE: %w", c.Err)
		}
	}
	return nil
}

// ErrReplyStalled: a client's connection took no reply WRITE within the
// listener's ReplyTimeout. The server gives such a client up.
var ErrReplyStalled = errors.New("rfp: reply WRITEs stalled")

// DefaultReplyTimeout bounds how long Respond waits for room to post a
// reply WRITE: a healthy connection drains in microseconds, but a client
// process on a busy machine may wait a scheduler slice or two to run.
const DefaultReplyTimeout = 20 * time.Millisecond

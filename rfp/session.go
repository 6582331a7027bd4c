package rfp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// Session is the server's side of one client: the grant (request and
// response rings for every partition) and the connection. Each partition's
// methods (Poll, PollBatch, Respond, FlushReplies) must be called only by
// that partition's goroutine; rings of different partitions share nothing.
type Session struct {
	ID     uint32
	conn   fabric.Conn
	pump   fabric.Pumper // conn's, where its NIC is a host thread
	grant  *fabric.Region
	mem    []byte
	layout Layout
	rings  []sessionRing
	long   *longBudget // the listener's pool of long values held for clients
	share  *longBudget // this client's own share, used before the pool
	// longHold: how long a long value may be held without progress.
	longHold int64
	// LongExpired counts long values dropped for that (any partition).
	longExpired atomic.Uint64

	replyMu      sync.Mutex // serialises reply-mode Post/Poll across partitions
	replyComps   [16]fabric.Completion
	replyTimeout time.Duration
	closed       atomic.Bool
	release      func() // gives the listener's client slot back, once
}

type sessionRing struct {
	next       uint32 // sequence expected next
	rpos       uint64 // request ring position of record next
	wpos       uint64 // response ring position of the next response
	stuckSince int64  // when the expected record was first seen invalid
	replyTo    fabric.Desc
	haveReply  bool
	// The response bytes [replyFrom, wpos) answered FlagReply requests
	// since the last FlushReplies: WRITEn to the client as one span.
	replyFrom  uint64
	replyStart bool
	replies    [2]fabric.Op
	// A request sent in parts: the parts so far (nil: none under way), and
	// the status its join gets when a part was refused.
	in       []byte
	inStatus Status
	inTaken  int  // bytes of the long budget in holds
	inPool   bool // ... taken from the listener's pool, not the share
	joined   bool // in is the value of the last join Poll returned
	// broken says why the client's records in this ring can no longer be
	// followed (Broken): the partition stops reading it.
	broken error
	// now is the clock of the last Poll; longAt, when a long value held
	// for this ring (parts or pieces) last made progress.
	now, longAt int64
	// Long responses being fetched in pieces, oldest first.
	out []longOut
	_   [64]byte // keep partitions' rings on separate cache lines
}

// StuckTimeout is how long a record may show the expected sequence number
// with a bad checksum or impossible lengths before the server answers it
// as malformed. Honest WRITEs land within microseconds.
const StuckTimeout = int64(1e9)

func newSession(id uint32, conn fabric.Conn, grant *fabric.Region, l Layout, replyTimeout time.Duration, long *longBudget, release func()) *Session {
	s := &Session{ID: id, conn: conn, grant: grant, mem: grant.Bytes(), layout: l,
		rings: make([]sessionRing, l.Partitions), replyTimeout: replyTimeout, long: long, release: release,
		share: newLongBudget(int64(LongShare(l.MaxValue))), longHold: int64(DefaultLongHold)}
	for p := range s.rings {
		s.rings[p].next = 1
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

// BellSource is the name this session's rings carry (Listener.TakeRingers),
// -1 where the fabric names none.
func (s *Session) BellSource() int {
	if rs, ok := s.conn.(fabric.RingSource); ok {
		return rs.BellSource()
	}
	return -1
}

// Close ends the connection and frees the grant. Call it only after every
// partition goroutine has stopped touching the session.
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
	for p := range s.rings {
		s.dropLong(p)
	}
	if s.release != nil {
		s.release()
	}
	return err
}

// reqAt is the request ring of p from position pos to the ring's end, or
// nil where no record fits before the end (the writer skipped those bytes).
func (s *Session) reqAt(p int, pos uint64) []byte {
	l := s.layout
	off := ringOff(pos, l.ReqRing)
	if l.ReqRing-off < reqMarkerLen {
		return nil
	}
	base := l.ReqBase(p)
	return s.mem[base+off : base+l.ReqRing]
}

// lapEnd is the position of the start of the lap after pos's.
func lapEnd(pos uint64, ring int) uint64 { return pos - uint64(ringOff(pos, ring)) + uint64(ring) }

// ErrRingProtocol: a client wrote records that no honest client writes
// (a wrap marker where a lap starts). The server closes its connection.
var ErrRingProtocol = errors.New("rfp: request ring broken by the client")

// maxPollSteps bounds the records (parts and pieces served inside, wrap
// markers followed) one Poll looks at: a client feeding its ring as fast
// as the partition reads it gets the partition back between passes.
const maxPollSteps = 64

// Penalize tells the fabric the client broke the protocol (a Broken
// ring): where the listener paces sources that cost it without doing work
// (tcp), the client's source is charged (fabric.Penalizer).
func (s *Session) Penalize() {
	if pz, ok := s.conn.(fabric.Penalizer); ok {
		pz.Penalize()
	}
}

// Next is the sequence number partition p expects next: it moves on
// with every record Poll takes, parts and pieces included.
func (s *Session) Next(p int) uint32 { return s.rings[p].next }

// Broken says why partition p stopped reading the session's ring (nil:
// it did not). The server ends such a session.
func (s *Session) Broken(p int) error { return s.rings[p].broken }

// Poll looks at partition p's next request record. It returns true with r
// filled when a request is there. A record that stayed malformed for
// StuckTimeout is returned with r.Op == 0, to be answered
// StatusBadRequest. Parts of long requests and piece requests of long
// responses are served here. now is a monotonic clock in nanoseconds.
//
// Every step moves the read position forward to a new record, or to the
// next lap's start past a wrap marker; a marker at a lap's start (which
// an honest client never writes: a record always fits a whole lap) breaks
// the ring (Broken) instead, so positions the client writes can never
// make the reader go round.
func (s *Session) Poll(p int, now int64, r *Request) bool {
	ring := &s.rings[p]
	if ring.joined {
		s.dropIn(p)
	}
	if ring.broken != nil {
		return false
	}
	ring.now = now
	if ring.longAt != 0 && now-ring.longAt > s.longHold {
		s.expireLong(p)
	}
	for step := 0; step < maxPollSteps; step++ {
		b := s.reqAt(p, ring.rpos)
		if b == nil {
			ring.rpos = lapEnd(ring.rpos, s.layout.ReqRing)
			continue
		}
		st := ParseRequest(b, ring.next, r)
		switch st {
		case SlotEmpty:
			return false
		case SlotWrap:
			ring.stuckSince = 0
			if ringOff(ring.rpos, s.layout.ReqRing) == 0 {
				ring.broken = fmt.Errorf("%w: partition %d: a wrap marker at a lap's start (sequence %d)", ErrRingProtocol, p, ring.next)
				return false
			}
			ring.rpos = lapEnd(ring.rpos, s.layout.ReqRing)
			continue
		case SlotReady:
			ring.stuckSince = 0
			r.at = ring.rpos
			switch {
			case r.Flags&FlagPart != 0:
				s.takePart(p, r)
				continue
			case r.Op == opPiece:
				s.sendPiece(p, r)
				continue
			case r.Flags&FlagJoin != 0:
				if !s.join(p, r) {
					continue
				}
			}
			return true
		}
		if ring.stuckSince == 0 {
			ring.stuckSince = now
			return false
		}
		if now-ring.stuckSince < StuckTimeout {
			return false
		}
		ring.stuckSince = 0
		// Skip the record: by its length where that was plausible (a torn
		// WRITE that never finished), else to the lap's end. Only a client
		// that wrote garbage gets here, and it gets StatusBadRequest.
		n := len(b)
		if st == SlotTorn {
			le := binary.LittleEndian
			n = min(reqRecLen(int(b[6])|int(b[7])<<8, int(le.Uint32(b[8:]))), len(b))
		}
		*r = Request{Seq: ring.next, at: ring.rpos, len: n}
		return true
	}
	return false // the rest in a later pass
}

// PollBatch fills rs with the consecutive ready requests of partition p's
// ring, starting at the next one, without consuming them: the caller
// answers them in order with Respond. Seeing several at once lets a server
// overlap their memory accesses. A malformed record is reported as Poll
// does, alone; parts and pieces end a batch.
func (s *Session) PollBatch(p int, now int64, rs []Request) int {
	if len(rs) == 0 || !s.Poll(p, now, &rs[0]) {
		return 0
	}
	if rs[0].Op == 0 || rs[0].Flags&FlagJoin != 0 {
		return 1
	}
	ring := &s.rings[p]
	pos := rs[0].at + uint64(rs[0].len)
	n := 1
	for n < len(rs) {
		b := s.reqAt(p, pos)
		if b == nil {
			pos = lapEnd(pos, s.layout.ReqRing)
			continue
		}
		r := &rs[n]
		st := ParseRequest(b, ring.next+uint32(n), r)
		if st == SlotWrap {
			if ringOff(pos, s.layout.ReqRing) == 0 {
				break // Poll finds it and breaks the ring
			}
			pos = lapEnd(pos, s.layout.ReqRing)
			continue
		}
		if st != SlotReady || r.Flags&(FlagPart|FlagJoin) != 0 || r.Op == opPiece {
			break
		}
		r.at = pos
		pos += uint64(r.len)
		n++
	}
	return n
}

// respAt places the response record for a payload of n bytes at p's
// write position, leaving a wrap marker where it does not fit before the
// ring's end, and returns the record's bytes and position. publish moves
// the write position past it.
func (s *Session) respAt(p, n int) ([]byte, uint64) {
	ring := &s.rings[p]
	l := s.layout
	base := l.RespBase(p)
	need := respRecLen(n)
	pos := ring.wpos
	off := ringOff(pos, l.RespRing)
	if rem := l.RespRing - off; need > rem {
		if rem >= respMarkerLen {
			SealResponse(s.mem[base+off:base+l.RespRing], ring.next, 0, respWrap, 0)
		}
		pos, off = lapEnd(pos, l.RespRing), 0
	}
	return s.mem[base+off : base+off+need], pos
}

// budgetOf bounds a request's response budget to what a ring can carry.
func (s *Session) budgetOf(r *Request) int {
	return max(min(int(r.Budget), s.layout.RespRing/2-respHeader-sumSize), 16)
}

// Respond answers the request Poll or PollBatch returned (in order) with
// status st and value val, in p's response ring. A value over the
// request's budget goes out in pieces: the first here, the rest kept for
// the client's piece requests. If the request asked for a reply the
// record joins the span FlushReplies WRITEs into the client's memory; it
// must follow each batch of Responds.
func (s *Session) Respond(p int, r *Request, st Status, val []byte) error {
	budget := s.budgetOf(r)
	var rflags uint8
	piece := val
	if len(val) > budget {
		piece = val[:budget-8]
		if err := s.keepLong(p, val, len(piece)); err != nil {
			st, piece = StatusNoMemory, nil
		} else {
			rflags = respMore | respFirst
		}
	}
	n := len(piece)
	if rflags&respFirst != 0 {
		n += 8
	}
	b, at := s.respAt(p, n)
	pl := ResponsePayload(b)
	if rflags&respFirst != 0 {
		binary.LittleEndian.PutUint64(pl, uint64(len(val)))
		pl = pl[8:]
	}
	copy(pl, piece)
	return s.publish(p, r, st, rflags, n, b, at)
}

// publish seals a response record placed at position at and moves both
// rings on. A reply span starts before any wrap marker respAt left.
func (s *Session) publish(p int, r *Request, st Status, rflags uint8, n int, b []byte, at uint64) error {
	ring := &s.rings[p]
	start := ring.wpos
	ring.wpos = at + uint64(SealResponse(b, r.Seq, st, rflags, n))
	ring.next++
	ring.rpos = r.at + uint64(r.len)
	if r.Flags&FlagReply == 0 {
		return nil
	}
	return s.stageReply(p, start)
}

// takePart keeps a part of a long request and acknowledges it. A part
// that cannot be kept is acknowledged with the status the join will get.
func (s *Session) takePart(p int, r *Request) {
	ring := &s.rings[p]
	if ring.joined {
		s.dropIn(p)
	}
	if ring.in == nil {
		total := int(r.Total)
		ring.in, ring.inStatus = []byte{}, StatusOK
		switch {
		case total > s.layout.MaxValue+StoreExtraLen || total < len(r.Value):
			ring.inStatus = StatusTooLarge
		default:
			pool, ok := s.takeLong(total)
			if !ok {
				ring.inStatus = StatusNoMemory
				break
			}
			ring.in, ring.inTaken, ring.inPool = make([]byte, 0, total), total, pool
		}
	}
	s.heldNow(p)
	if ring.inStatus == StatusOK {
		if len(ring.in)+len(r.Value) > cap(ring.in) {
			ring.inStatus = StatusBadRequest
		} else {
			ring.in = append(ring.in, r.Value...)
		}
	}
	s.Respond(p, r, ring.inStatus, nil)
}

// join turns the record ending a long request into the whole request:
// its value is the parts and its own. A join whose parts were refused
// is answered here, and join reports false.
func (s *Session) join(p int, r *Request) bool {
	ring := &s.rings[p]
	st := ring.inStatus
	if ring.in == nil || st == StatusOK && len(ring.in)+len(r.Value) != int(r.Total) {
		st = StatusBadRequest
	}
	if st != StatusOK {
		s.dropIn(p)
		s.Respond(p, r, st, nil)
		return false
	}
	// The joined value stays valid until p's next Poll.
	r.Value = append(ring.in, r.Value...)
	ring.joined = true
	return true
}

// dropIn releases a long request's parts.
func (s *Session) dropIn(p int) {
	ring := &s.rings[p]
	s.giveLong(ring.inTaken, ring.inPool)
	ring.in, ring.joined, ring.inTaken, ring.inPool = nil, false, 0, false
	s.heldNow(p)
}

// longOut is a long response being fetched in pieces: sent of it so far.
type longOut struct {
	v    []byte
	sent int
	pool bool // its bytes came from the listener's pool, not the share
}

// keepLong queues a long response's payload for piece requests; sent
// bytes of it go with the response itself.
func (s *Session) keepLong(p int, val []byte, sent int) error {
	ring := &s.rings[p]
	if len(ring.out) >= s.layout.Slots {
		return errLongBudget
	}
	pool, ok := s.takeLong(len(val))
	if !ok {
		return errLongBudget
	}
	ring.out = append(ring.out, longOut{append([]byte(nil), val...), sent, pool})
	s.heldNow(p)
	return nil
}

var errLongBudget = errors.New("rfp: no room for a long response")

// sendPiece answers a piece request with the next piece of the oldest
// long response.
func (s *Session) sendPiece(p int, r *Request) {
	ring := &s.rings[p]
	if len(ring.out) == 0 {
		s.Respond(p, r, StatusBadRequest, nil)
		return
	}
	o := &ring.out[0]
	n := min(len(o.v)-o.sent, s.budgetOf(r))
	var rflags uint8
	if o.sent+n < len(o.v) {
		rflags = respMore
	}
	b, at := s.respAt(p, n)
	copy(ResponsePayload(b), o.v[o.sent:o.sent+n])
	o.sent += n
	if rflags == 0 {
		s.giveLong(len(o.v), o.pool)
		ring.out[0] = longOut{}
		ring.out = ring.out[1:]
	}
	s.heldNow(p)
	s.publish(p, r, StatusOK, rflags, n, b, at)
}

// dropLong releases everything kept for p's long values.
func (s *Session) dropLong(p int) {
	ring := &s.rings[p]
	for _, o := range ring.out {
		s.giveLong(len(o.v), o.pool)
	}
	ring.out = nil
	s.dropIn(p)
}

// stageReply adds the response record that starts at start (and ends at
// the write position) to p's reply span.
func (s *Session) stageReply(p int, start uint64) error {
	ring := &s.rings[p]
	if !ring.haveReply {
		d, ok := ParseControl(s.mem[:ControlSize])
		if !ok || d.Len < uint64(s.layout.Size()) {
			return errors.New("rfp: client asked for a reply but gave no valid local region")
		}
		ring.replyTo, ring.haveReply = d, true
	}
	if !ring.replyStart {
		ring.replyFrom, ring.replyStart = start, true
	}
	if ring.wpos-ring.replyFrom > uint64(s.layout.RespRing)/2 {
		// Flush well before the span could lap itself.
		_, err := s.FlushReplies(p)
		return err
	}
	return nil
}

// FlushReplies posts the reply span Respond staged for partition p: one
// WRITE, two where it crosses the ring's end. It returns the WRITEs
// posted.
func (s *Session) FlushReplies(p int) (int, error) {
	if !s.rings[p].replyStart { // inlined: a partition's every empty look asks
		return 0, nil
	}
	return s.flushSpan(p)
}

func (s *Session) flushSpan(p int) (int, error) {
	ring := &s.rings[p]
	ring.replyStart = false
	l := s.layout
	base := l.RespBase(p)
	ops := ring.replies[:0]
	from, to := ring.replyFrom, ring.wpos
	for from < to {
		off := ringOff(from, l.RespRing)
		n := min(int(to-from), l.RespRing-off)
		ops = append(ops, fabric.Op{Kind: fabric.OpWrite, ID: uint64(p), Local: s.grant, LocalOff: base + off,
			Len: n, Remote: ring.replyTo, RemoteOff: uint64(base + off)})
		from += uint64(n)
	}
	if len(ops) == 0 {
		return 0, nil
	}
	s.replyMu.Lock()
	defer s.replyMu.Unlock()
	var deadline time.Time
	for {
		err := s.conn.Post(ops)
		if err == nil {
			break
		}
		if !errors.Is(err, fabric.ErrQueueFull) {
			return 0, err
		}
		// The client's fabric is not taking our WRITEs: wait for room,
		// but only so long, or one client would hold the partition.
		if deadline.IsZero() {
			deadline = time.Now().Add(s.replyTimeout)
		} else if time.Now().After(deadline) {
			return 0, fmt.Errorf("%w: no room for a reply WRITE in %v", ErrReplyStalled, s.replyTimeout)
		}
		if _, err := s.conn.Poll(s.replyComps[:]); err != nil {
			return 0, err
		}
	}
	n2, err := s.conn.Poll(s.replyComps[:])
	if err != nil {
		return len(ops), err
	}
	for _, c := range s.replyComps[:n2] {
		if c.Err != nil {
			return len(ops), fmt.Errorf("rfp: reply WRITE: %w", c.Err)
		}
	}
	return len(ops), nil
}

// ErrReplyStalled: a client's connection took no reply WRITE within the
// listener's ReplyTimeout. The server gives such a client up.
var ErrReplyStalled = errors.New("rfp: reply WRITEs stalled")

// DefaultReplyTimeout bounds how long Respond waits for room to post a
// reply WRITE: a healthy connection drains in microseconds, but a client
// process on a busy machine may wait a scheduler slice or two to run.
const DefaultReplyTimeout = 20 * time.Millisecond

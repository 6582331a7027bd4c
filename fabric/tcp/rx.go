package tcp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// errProto marks a peer that broke the protocol; the connection ends.
var errProto = errors.New("fabric/tcp: protocol error")

// errEOF is the peer's orderly shutdown.
var errEOF = errors.New("connection closed by peer")

func protoErr(format string, args ...any) error {
	return fmt.Errorf("%w: %w: %s", fabric.ErrPeerGone, errProto, fmt.Sprintf(format, args...))
}

var epoch = time.Now()

// nanotime is a monotonic clock in nanoseconds.
func nanotime() int64 { return int64(time.Since(epoch)) }

// rxState is the frame decoder's place in the byte stream: a header being
// collected across reads, or a payload being copied (or skipped) across
// reads. It decodes whatever it is given, in any pieces.
type rxState struct {
	hdr  [reqSize]byte
	have int // header bytes collected
	need int // header size of the frame being collected

	// A payload in progress: dst is what is left to fill (nil: skip
	// bytes instead), then finish runs.
	payload payloadKind
	dst     []byte
	skip    uint64
	r       *region // payloadWrite: the target region, referenced
}

type payloadKind uint8

const (
	payloadNone  payloadKind = iota
	payloadWrite             // the peer's WRITE into our region
	payloadRead              // the data of our READ's response
)

// drop releases what a payload in progress holds; the connection is gone.
func (s *rxState) drop() {
	if s.r != nil {
		s.r.release()
		s.r = nil
	}
	s.payload, s.dst, s.skip = payloadNone, nil, 0
}

// frameSize is the header size of a frame type; 0 if unknown.
func frameSize(typ byte) int {
	switch typ {
	case frameRead, frameWrite, frameRing:
		return reqSize
	case frameResp:
		return respSize
	}
	return 0
}

// kickRead reads the socket for an event (the poller's, or room made
// for a paused rx), unless another goroutine is reading it: that one then
// reads again before it lets go, so bytes that arrive meanwhile are never
// left behind. buf is the caller's read buffer; nil takes the
// connection's own. toEmpty reads until the socket says it has nothing;
// without it a short read ends the pass, which is safe for an
// edge-triggered event without EPOLLRDHUP: bytes that arrive after the
// event was taken raise another one, and the FIN of a peer that closed
// before it would have set EPOLLRDHUP.
func (c *conn) kickRead(buf []byte, toEmpty bool) { c.kickReadBudget(buf, toEmpty, 0) }

// kickReadBudget is kickRead reading at most about budget bytes (0: no
// limit); more says it stopped there and the socket may hold more, which
// no new event will report: only the poller, which comes back to such
// connections, gives a budget.
func (c *conn) kickReadBudget(buf []byte, toEmpty bool, budget int) (more bool) {
	if buf == nil {
		buf = c.ownBuf()
	}
	c.rxWant.Store(true)
	for c.rxWant.Load() && c.rxMu.TryLock() {
		c.rxWant.Store(false)
		var err error
		more, err = c.readLocked(buf, toEmpty, budget)
		toEmpty = true // a retry is for somebody else's kick
		c.rxMu.Unlock()
		if err != nil {
			c.fail(err)
			return false
		}
		if more {
			// Out of budget: the poller comes back after the others.
			return true
		}
	}
	return false
}

// pollRead is Poll's read (hold false) and Pump's (hold true): once, if
// nobody else is reading (the caller comes back anyway), stopping at a
// short read; then whatever events came in meanwhile. A pumped read holds
// a READ that follows a WRITE it applied for the next read (the next
// Pump, or Release): the target that pumps looks at its memory in
// between, so a READ sent close behind a request finds the request's
// answer instead of costing the initiator a READ again. Only the order of
// serving changes: the READ still sees every WRITE before it, and the
// next read serves it first.
func (c *conn) pollRead(hold bool) {
	if !c.rxMu.TryLock() {
		return
	}
	c.rxPumping = hold
	_, err := c.readLocked(c.ownBuf(), false, 0)
	c.rxPumping = false
	c.rxMu.Unlock()
	if err != nil {
		c.fail(err)
		return
	}
	if c.rxWant.Load() && !c.held.Load() {
		c.kickRead(nil, true)
	}
}

// readLocked reads and decodes until the socket is empty, the connection
// is dead or stopped, tx asks rx to wait for room, or it has read budget
// bytes if budget > 0 (more: the socket may hold more) (rxMu held).
func (c *conn) readLocked(buf []byte, toEmpty bool, budget int) (more bool, err error) {
	limited := budget > 0
	c.rxWrote = false
	c.held.Store(false)
	for !c.dead.Load() && !c.rxStop && !c.held.Load() {
		if c.rxPause.Load() {
			// flushBatch below sends what it can: that makes room (and
			// kicks rx again) or arms the stall timer, so a paused
			// connection is always resumed or dropped.
			break
		}
		if len(c.rxLeft) > 0 {
			// What a pause left undecoded comes before the socket.
			left := c.rxLeft
			c.rxLeft = c.rxLeft[:0]
			err := c.decode(left)
			if len(c.rxLeft) == 0 && cap(c.rxLeft) > keepLeft {
				c.rxLeft = nil
			}
			if err != nil {
				return false, err
			}
			continue
		}
		if limited && budget <= 0 {
			more = true
			break
		}
		b := buf
		direct := c.rx.payload != payloadNone && c.rx.dst != nil && len(c.rx.dst) >= directMin
		if direct {
			// A long payload goes straight to its region.
			b = c.rx.dst
		}
		n, again, err := recvSome(c.fd, b)
		if err != nil {
			return false, c.readErr(err)
		}
		if again {
			break
		}
		budget -= n
		c.lastRx.Store(nanotime())
		if direct {
			c.rx.dst = c.rx.dst[n:]
			if len(c.rx.dst) == 0 {
				err = c.finishPayload()
			}
		} else {
			err = c.decode(b[:n])
		}
		if err != nil {
			return false, err
		}
		if n < len(b) && !toEmpty {
			break
		}
	}
	// Answer a batch of requests with one send.
	if err := c.flushBatch(); err != nil {
		return false, c.readErr(err)
	}
	return more, nil
}

// ownBuf is the connection's own read buffer, made on first use (by
// Poll on a busy connection), so idle connections cost none.
func (c *conn) ownBuf() []byte {
	b := c.rxBuf.Load()
	if b == nil {
		nb := make([]byte, ownBufSize)
		b = &nb
		if !c.rxBuf.CompareAndSwap(nil, b) {
			b = c.rxBuf.Load()
		}
	}
	return *b
}

func (c *conn) readErr(err error) error {
	if c.closed.Load() {
		return fabric.ErrClosed
	}
	if c.dead.Load() {
		return c.err
	}
	if errors.Is(err, errProto) {
		return err
	}
	return fmt.Errorf("%w: %v", fabric.ErrPeerGone, err)
}

// decode consumes b, which may end anywhere in a frame.
func (c *conn) decode(b []byte) error {
	s := &c.rx
	for len(b) > 0 {
		if c.rxPause.Load() {
			// The peer has as many answers waiting as it may: keep the
			// rest for when it has taken them (readLocked), so one read
			// stages no more than the peer's depth.
			c.rxLeft = append(c.rxLeft[:0], b...)
			return nil
		}
		if s.payload != payloadNone {
			if s.dst == nil {
				k := min(s.skip, uint64(len(b)))
				s.skip -= k
				b = b[k:]
				if s.skip > 0 {
					return nil
				}
			} else {
				k := copy(s.dst, b)
				s.dst = s.dst[k:]
				b = b[k:]
				if len(s.dst) > 0 {
					return nil
				}
			}
			if err := c.finishPayload(); err != nil {
				return err
			}
			continue
		}
		var h []byte
		if s.have == 0 && b[0] == frameRead && c.rxWrote && c.rxPumping {
			c.rxLeft = append(c.rxLeft[:0], b...)
			c.held.Store(true)
			return nil
		}
		if s.have == 0 {
			s.need = frameSize(b[0])
			if s.need == 0 {
				return protoErr("unknown frame type %#x", b[0])
			}
			if len(b) >= s.need {
				h, b = b[:s.need], b[s.need:]
			}
		}
		if h == nil {
			k := copy(s.hdr[s.have:s.need], b)
			s.have += k
			b = b[k:]
			if s.have < s.need {
				return nil
			}
			h, s.have = s.hdr[:s.need], 0
		}
		if err := c.frame(h); err != nil {
			return err
		}
		if c.stopping.Load() {
			return nil // Close is waiting: the rest stays unapplied
		}
	}
	return nil
}

// frame acts on one whole frame header.
func (c *conn) frame(h []byte) error {
	if h[0] == frameResp {
		return c.complete(h[1])
	}
	key := binary.LittleEndian.Uint32(h[4:])
	addr := binary.LittleEndian.Uint64(h[8:])
	n := uint64(binary.LittleEndian.Uint32(h[16:]))
	switch h[0] {
	case frameRing:
		if key < fabric.MaxDoorbells {
			_ = c.bells.RingFrom(int(key), c.source) // nil bells: none offered
		}
		return nil
	case frameRead:
		if n > MaxOpLen {
			return protoErr("READ of %d bytes exceeds %d", n, MaxOpLen)
		}
		r, off := c.d.access(key, addr, n)
		if r == nil {
			c.respond(statusAccess, nil, true)
			return nil
		}
		if c.vanished != nil {
			c.readBytes.Add(n)
		}
		c.respondRead(r, off, n)
		return nil
	}
	// frameWrite
	if n > MaxOpLen {
		return protoErr("WRITE of %d bytes exceeds %d", n, MaxOpLen)
	}
	r, off := c.d.access(key, addr, n)
	s := &c.rx
	s.payload = payloadWrite
	if r != nil {
		if c.vanished != nil && !c.asked.Load() {
			c.asked.Store(true)
		}
		s.r, s.dst = r, r.mem[off:off+n:off+n]
		c.txMu.Lock()
		c.tx.unshare(r, off, n)
		c.txMu.Unlock()
	} else {
		s.skip = n // skip the payload so the stream stays in step
	}
	if n == 0 {
		return c.finishPayload()
	}
	return nil
}

// finishPayload runs when a payload is all in.
func (c *conn) finishPayload() error {
	s := &c.rx
	kind := s.payload
	s.payload, s.dst, s.skip = payloadNone, nil, 0
	if kind == payloadRead {
		c.completed(nil)
		return nil
	}
	st := uint8(statusAccess)
	if s.r != nil {
		s.r.release()
		s.r = nil
		st = statusOK
		c.rxWrote = true
	}
	c.respond(st, nil, st != statusOK)
	return nil
}

// complete matches a response to the oldest uncompleted op of ours.
func (c *conn) complete(status uint8) error {
	i := c.resp.Load()
	if i == c.tail.Load() {
		return protoErr("response with no request outstanding")
	}
	e := &c.ops[i&c.mask]
	switch status {
	case statusOK:
		if e.kind == fabric.OpRead && e.n > 0 {
			c.rx.payload = payloadRead
			c.rx.dst = e.local.mem[e.loff : e.loff+e.n : e.loff+e.n]
			return nil
		}
		c.completed(nil)
	case statusAccess:
		c.completed(fabric.ErrRemoteAccess)
	default:
		return protoErr("unknown response status %d", status)
	}
	return nil
}

// completed finishes the oldest uncompleted op.
func (c *conn) completed(err error) {
	i := c.resp.Load()
	e := &c.ops[i&c.mask]
	e.err = err
	e.local.release()
	e.local = nil
	c.resp.Store(i + 1)
}

// respond stages the NIC's response to the peer's oldest unanswered
// request. A peer with more responses waiting than its declared depth,
// or outHigh bytes of them, is not read until they drain: one that sends
// requests and reads no responses then stalls, and SendTimeout ends it.
// Honest peers never get there (two that READ from each other in bulk
// must not both stop reading).
// A good WRITE's ack is not urgent (see flushBatch).
func (c *conn) respond(status uint8, data []byte, urgent bool) {
	c.txMu.Lock()
	c.tx.putResp(status, data)
	c.tx.urgent = c.tx.urgent || urgent
	if c.overfull() {
		c.rxPause.Store(true)
	}
	c.txMu.Unlock()
}

// respondRead stages a good READ's response from r[off:off+n] and takes
// over the caller's reference to r.
func (c *conn) respondRead(r *region, off, n uint64) {
	c.txMu.Lock()
	c.tx.putReadResp(r, off, r.mem[off:off+n])
	c.tx.urgent = true
	if c.overfull() {
		c.rxPause.Store(true)
	}
	c.txMu.Unlock()
}

package rfp

import (
	"context"
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
	grant  *fabric.Region
	mem    []byte
	layout Layout
	rings  []sessionRing

	replyMu    sync.Mutex // serialises reply-mode Post/Poll across partitions
	replyComps [16]fabric.Completion
	closed     atomic.Bool
}

type sessionRing struct {
	next       uint32 // sequence expected next
	stuckSince int64  // when the expected slot was first seen invalid
	replyTo    fabric.Desc
	haveReply  bool
	cur        Request
	reply      [1]fabric.Op
	_          [64]byte // keep partitions' rings on separate cache lines
}

// StuckTimeout is how long a slot may show the expected sequence number
// with a bad checksum or impossible lengths before the server answers it
// as malformed. Honest WRITEs land within microseconds.
const StuckTimeout = int64(1e9)

func newSession(id uint32, conn fabric.Conn, grant *fabric.Region, l Layout) *Session {
	s := &Session{ID: id, conn: conn, grant: grant, mem: grant.Bytes(), layout: l,
		rings: make([]sessionRing, l.Partitions)}
	for p := range s.rings {
		s.rings[p].next = 1
	}
	return s
}

// Layout is the session's geometry.
func (s *Session) Layout() Layout { return s.layout }

// Done is closed when the client's connection ends.
func (s *Session) Done() <-chan struct{} { return s.conn.Done() }

// Err says why the connection ended.
func (s *Session) Err() error { return s.conn.Err() }

// Close ends the connection and frees the grant. Call it only after every
// partition goroutine has stopped touching the session.
func (s *Session) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	err := s.conn.Close()
	s.grant.Close()
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
// reply it also WRITEs the response into the client's memory.
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
	ring.reply[0] = fabric.Op{Kind: fabric.OpWrite, ID: uint64(p), Local: s.grant, LocalOff: off,
		Len: size, Remote: ring.replyTo, RemoteOff: uint64(off)}
	s.replyMu.Lock()
	defer s.replyMu.Unlock()
	for {
		err := s.conn.Post(ring.reply[:])
		if err == nil {
			break
		}
		if !errors.Is(err, fabric.ErrQueueFull) {
			return err
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

// ListenConfig is the server's side of the geometry.
type ListenConfig struct {
	Partitions int
	Slots      int // per ring; default DefaultSlots
	MaxValue   int
	Fabric     fabric.Options
}

// Listener accepts clients and grants each its rings.
type Listener struct {
	ln     fabric.Listener
	bells  fabric.Doorbells // nil when the fabric has none
	cfg    ListenConfig
	nextID atomic.Uint32
}

// Listen starts listening on a fabric URL.
func Listen(addr string, cfg ListenConfig) (*Listener, error) {
	if cfg.Slots == 0 {
		cfg.Slots = DefaultSlots
	}
	if _, err := NewLayout(cfg.Partitions, cfg.Slots, cfg.MaxValue); err != nil {
		return nil, err
	}
	fo := cfg.Fabric
	fo.Doorbells = cfg.Partitions // one per partition, where the fabric has them
	ln, err := fabric.Listen(addr, fo)
	if err != nil {
		return nil, err
	}
	l := &Listener{ln: ln, cfg: cfg}
	l.bells, _ = ln.(fabric.Doorbells)
	return l, nil
}

// HasDoorbells says whether idle partitions can block in WaitBell; without
// them they must poll.
func (l *Listener) HasDoorbells() bool { return l.bells != nil }

// WaitBell blocks until a client rings partition p's doorbell or d passes.
func (l *Listener) WaitBell(p int, d time.Duration) (bool, error) {
	if l.bells == nil {
		return false, errors.New("rfp: fabric has no doorbells")
	}
	return l.bells.WaitBell(p, d)
}

// RingBell wakes partition p's waiter (at shutdown).
func (l *Listener) RingBell(p int) {
	if l.bells != nil {
		l.bells.RingBell(p)
	}
}

// Addr is the URL clients dial.
func (l *Listener) Addr() string { return l.ln.Addr() }

// Close stops accepting.
func (l *Listener) Close() error { return l.ln.Close() }

// HandshakeError is a failed handshake with one client; the listener is
// still good.
type HandshakeError struct{ Err error }

func (e *HandshakeError) Error() string { return "rfp: handshake: " + e.Err.Error() }
func (e *HandshakeError) Unwrap() error { return e.Err }

// Accept waits for a client, checks its hello, grants its rings and
// completes the handshake. Errors of one client come as *HandshakeError.
func (l *Listener) Accept(ctx context.Context) (*Session, error) {
	setup, err := l.ln.Accept(ctx)
	if err != nil {
		return nil, err
	}
	h, err := ParseHello(setup.PeerData())
	if err != nil {
		setup.Close()
		return nil, &HandshakeError{err}
	}
	// A client may ask for a deeper ring than the default (a larger
	// window), up to a cap that bounds what one client can make us grant.
	slots := l.cfg.Slots
	if h.Slots != 0 && int(h.Slots) <= max(l.cfg.Slots, 32) {
		slots = int(h.Slots)
	}
	layout, err := NewLayout(l.cfg.Partitions, slots, l.cfg.MaxValue)
	if err != nil {
		setup.Close()
		return nil, &HandshakeError{err}
	}
	grant, err := setup.Alloc(layout.Size())
	if err != nil {
		setup.Close()
		return nil, &HandshakeError{err}
	}
	id := l.nextID.Add(1)
	w := Welcome{Layout: layout, Grant: grant.Desc(), ClientID: id}
	conn, err := setup.Establish(ctx, w.Put())
	if err != nil {
		grant.Close()
		setup.Close()
		return nil, &HandshakeError{err}
	}
	return newSession(id, conn, grant, layout), nil
}

// Dial connects to a Jakiro server and returns the client side.
func Dial(ctx context.Context, addr string, cfg InitiatorConfig, fo fabric.Options) (*Initiator, error) {
	setup, err := fabric.Dial(ctx, addr, fo)
	if err != nil {
		return nil, err
	}
	conn, err := setup.Establish(ctx, Hello{Version: Version, Slots: uint16(cfg.Window)}.Put())
	if err != nil {
		setup.Close()
		return nil, err
	}
	w, err := ParseWelcome(conn.PeerData())
	if err != nil {
		conn.Close()
		return nil, err
	}
	local, err := conn.Alloc(w.Layout.Size())
	if err != nil {
		conn.Close()
		return nil, err
	}
	in, err := NewInitiator(conn, local, w, cfg)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return in, nil
}

// Close ends the client's connection.
func (in *Initiator) Close() error { return in.conn.Close() }

// Done is closed when the connection ends.
func (in *Initiator) Done() <-chan struct{} { return in.conn.Done() }

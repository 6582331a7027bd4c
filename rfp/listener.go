package rfp

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// DefaultMaxClients bounds the sessions a listener keeps at once.
const DefaultMaxClients = 4096

// ErrServerFull is what a client refused for --max-clients gets from Dial.
var ErrServerFull = errors.New("rfp: server refused the connection: it has its maximum of clients (server --max-clients)")

// ListenConfig is the server's side of the geometry.
type ListenConfig struct {
	Partitions int
	Slots      int // requests in flight per client and partition; default DefaultSlots
	MaxValue   int
	// ReqRing and RespRing are the ring sizes per client and partition in
	// bytes (default DefaultRequestRing, DefaultResponseRing).
	ReqRing, RespRing int
	// LongBudget bounds the bytes of long values (sent in parts, fetched
	// in pieces) held for all clients at once (default DefaultLongBudget).
	LongBudget int64
	// MaxClients bounds the sessions alive at once (default
	// DefaultMaxClients); a client beyond it is refused with ErrServerFull.
	MaxClients int
	// ReplyTimeout bounds a reply WRITE's wait for room (default
	// DefaultReplyTimeout).
	ReplyTimeout time.Duration
	// Fabric options; a zero DomainSize becomes what one grant needs.
	Fabric fabric.Options
	// AuthToken, if set, is the token every client must present.
	AuthToken string
}

// maxHelloSlots caps the ring depth a client may ask for beyond the
// server's default: it bounds what one client can make us grant.
const maxHelloSlots = 32

func (c ListenConfig) grantSlots(hello int) int {
	if hello != 0 && hello <= max(c.Slots, maxHelloSlots) {
		return hello
	}
	return c.Slots
}

// Listener accepts clients and grants each its rings.
type Listener struct {
	ln     fabric.Listener
	bells  fabric.Doorbells // nil when the fabric has none
	cfg    ListenConfig
	auth   authCheck
	nextID atomic.Uint32
	live   atomic.Int64 // sessions not closed yet
	long   *longBudget
	// handler takes the clients whose hello the fabric read on a thread
	// of its own (Handle); nil: they wait for Accept.
	handler atomic.Pointer[handler]

	refusing sync.WaitGroup // refusals still completing their handshake
}

// Listen starts listening on a fabric URL.
func Listen(addr string, cfg ListenConfig) (*Listener, error) {
	if cfg.Slots == 0 {
		cfg.Slots = DefaultSlots
	}
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = DefaultMaxClients
	}
	if cfg.ReplyTimeout <= 0 {
		cfg.ReplyTimeout = DefaultReplyTimeout
	}
	if cfg.LongBudget <= 0 {
		cfg.LongBudget = DefaultLongBudget
	}
	biggest, err := NewLayout(cfg.Partitions, cfg.Slots, cfg.MaxValue, cfg.ReqRing, cfg.RespRing)
	if err != nil {
		return nil, err
	}
	cfg.ReqRing, cfg.RespRing = biggest.ReqRing, biggest.RespRing
	fo := cfg.Fabric
	fo.Doorbells = cfg.Partitions // one per partition, where the fabric has them
	if fo.DomainSize == 0 {
		// A connection's domain holds its grant and nothing else: sized to
		// the largest grant, not the fabric's default of a GiB.
		fo.DomainSize = int64(biggest.Size()) + grantSlack
	}
	l := &Listener{cfg: cfg, auth: newAuthCheck(cfg.AuthToken), long: newLongBudget(cfg.LongBudget)}
	fo.OnSetup = l.onSetup
	ln, err := fabric.Listen(addr, fo)
	if err != nil {
		return nil, err
	}
	l.ln = ln
	l.bells, _ = ln.(fabric.Doorbells)
	return l, nil
}

// handler is what Handle installed.
type handler struct {
	add     func(*Session)
	refused func(error)
}

// Handle makes the listener hand each client whose hello the fabric read
// on a thread of its own (fabric.Options.OnSetup: shm's accept loop, tcp's
// handshake goroutine) to add on that thread, welcome sent: no thread is
// woken between the client's hello and its welcome, nor to publish it. Other clients still come from Accept.
// add and refused (a *HandshakeError) must not block. Handle(nil, nil)
// stops it.
func (l *Listener) Handle(add func(*Session), refused func(error)) {
	if add == nil {
		l.handler.Store(nil)
		return
	}
	l.handler.Store(&handler{add: add, refused: refused})
}

// onSetup is the fabric's OnSetup: a handled client is answered here.
func (l *Listener) onSetup(ctx context.Context, setup fabric.Setup) bool {
	h := l.handler.Load()
	if h == nil {
		return false
	}
	sess, err := l.accept(ctx, setup)
	if err != nil {
		h.refused(err)
		return true
	}
	h.add(sess)
	return true
}

// HasDoorbells says whether idle partitions can block in WaitBell; without
// them they must poll.
func (l *Listener) HasDoorbells() bool { return l.bells != nil }

// WaitBell blocks until a client rings partition p's doorbell or d passes;
// with d <= 0 it only checks (and clears) the bell.
func (l *Listener) WaitBell(p int, d time.Duration) (bool, error) {
	if l.bells == nil {
		return false, errors.New("rfp: fabric has no doorbells")
	}
	return l.bells.WaitBell(p, d)
}

// BellRings is how many times partition p's doorbell was rung (and seen),
// where the fabric counts rings (CountsRings); 0 where it does not.
func (l *Listener) BellRings(p int) uint64 {
	if rc, ok := l.ln.(fabric.RingCounter); ok {
		return rc.BellRings(p)
	}
	return 0
}

// CountsRings reports whether BellRings counts rings on this fabric.
func (l *Listener) CountsRings() bool {
	_, ok := l.ln.(fabric.RingCounter)
	return ok && l.bells != nil
}

// NamesRingers reports whether TakeRingers says who rang, on this fabric.
func (l *Listener) NamesRingers() bool {
	_, ok := l.ln.(fabric.RingSources)
	return ok && l.bells != nil
}

// TakeRingers appends to dst the Session.BellSource of the sessions that
// rang partition p's bell since the last call (where NamesRingers). A
// client can name others or none: count rings too.
func (l *Listener) TakeRingers(p int, dst []int) []int {
	if rs, ok := l.ln.(fabric.RingSources); ok {
		return rs.TakeRingers(p, dst)
	}
	return dst
}

// ReadyStats reports the fabric listener's pool of connections prepared
// before anyone dials (fabric.Options.Ready); zero where it keeps none.
func (l *Listener) ReadyStats() fabric.ReadyStats {
	if rc, ok := l.ln.(fabric.ReadyCounter); ok {
		return rc.ReadyStats()
	}
	return fabric.ReadyStats{}
}

// SyscallWaiters is the fabric's goroutines that wait in blocking system
// calls (fabric.SyscallWaiters).
func (l *Listener) SyscallWaiters() int { return fabric.SyscallWaitersOf(l.ln) }

// Clients is the number of sessions accepted and not closed yet.
func (l *Listener) Clients() int { return int(l.live.Load()) }

// RingBell wakes partition p's waiter (at shutdown).
func (l *Listener) RingBell(p int) {
	if l.bells != nil {
		l.bells.RingBell(p)
	}
}

// Addr is the URL clients dial.
func (l *Listener) Addr() string { return l.ln.Addr() }

// Close stops accepting and waits for refusals in progress.
func (l *Listener) Close() error {
	err := l.ln.Close()
	l.refusing.Wait()
	return err
}

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
	return l.accept(ctx, setup)
}

// accept checks a setup's hello, grants its rings and completes its
// handshake.
func (l *Listener) accept(ctx context.Context, setup fabric.Setup) (*Session, error) {
	h, err := ParseHello(setup.PeerData())
	if errors.Is(err, ErrVersion) {
		l.refuse(ctx, setup, RefusedVersion) // the welcome names our version
		return nil, &HandshakeError{err}
	}
	if err != nil {
		setup.Close()
		return nil, &HandshakeError{err}
	}
	if err := l.auth.check(h); err != nil {
		l.refuse(ctx, setup, RefusedAuth)
		return nil, &HandshakeError{err}
	}
	if l.live.Add(1) > int64(l.cfg.MaxClients) {
		l.live.Add(-1)
		l.refuse(ctx, setup, RefusedFull)
		return nil, &HandshakeError{ErrServerFull}
	}
	sess, err := l.grant(ctx, setup, h)
	if err != nil {
		l.live.Add(-1)
		return nil, &HandshakeError{err}
	}
	return sess, nil
}

// grantSlack is room beyond the grant in a connection's domain: page
// rounding of the grant and the fabric's own bookkeeping.
const grantSlack = 64 << 10

// grant allocates a client's rings and completes its handshake.
func (l *Listener) grant(ctx context.Context, setup fabric.Setup, h Hello) (*Session, error) {
	layout, err := NewLayout(l.cfg.Partitions, l.cfg.grantSlots(int(h.Slots)), l.cfg.MaxValue, l.cfg.ReqRing, l.cfg.RespRing)
	if err != nil {
		setup.Close()
		return nil, err
	}
	grant, err := setup.Alloc(layout.Size())
	if err != nil {
		setup.Close()
		return nil, err
	}
	id := l.nextID.Add(1)
	w := Welcome{Layout: layout, Grant: grant.Desc(), ClientID: id}
	conn, err := setup.Establish(ctx, w.Put())
	if err != nil {
		grant.Close()
		setup.Close()
		return nil, err
	}
	var once sync.Once
	release := func() { once.Do(func() { l.live.Add(-1) }) }
	return newSession(id, conn, grant, layout, l.cfg.ReplyTimeout, l.long, release), nil
}

// refuse completes a handshake with a refusal, so the client learns why,
// and closes the connection. It runs beside Accept (a peer that stalls
// its side of the handshake must not hold up the next client); Close
// waits for it.
func (l *Listener) refuse(ctx context.Context, setup fabric.Setup, why Refusal) {
	l.refusing.Add(1)
	go func() {
		defer l.refusing.Done()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), refuseTimeout)
		defer cancel()
		conn, err := setup.Establish(ctx, Welcome{Refused: why}.Put())
		if err != nil {
			setup.Close()
			return
		}
		conn.Close()
	}()
}

// refuseTimeout bounds the handshake of a refused client.
const refuseTimeout = time.Second

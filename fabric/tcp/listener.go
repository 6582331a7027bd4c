package tcp

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/internal/acceptq"
	"github.com/jakiro-kv/jakiro/fabric/internal/eventbell"
	"golang.org/x/sys/unix"
)

// listener hands the sockets it accepts to an acceptq.Queue, which runs
// each hello under a timeout (on the accept loop's thread when the whole
// hello is there already: arrived, else in a goroutine of its own) and
// caps the pending ones overall and per source address; only good hellos
// reach Accept.
type listener struct {
	q     *acceptq.Queue[*setup]
	o     fabric.Options
	bells *eventbell.Set // nil without Options.Doorbells
	addr  string
	once  sync.Once
}

// Handshake bounds: a hello is one small message sent right after the
// connect, so these only ever hold up floods.
const (
	maxPending   = 1024 // hellos being read at once
	maxPerSource = 64   // of them from one IP address
	maxReady     = 128  // setups waiting for Accept
)

// Churn pacing (acceptq's churn.go): a connection its peer ends within
// youngAge of the handshake is charged what it cost beyond the work it
// asked for (conn.youngCost: 1 for a handshake no request followed, 1
// per readCharge bytes of READs); a source charged more than churnBurst
// lately gets its handshakes started at most churnRate a second. A peer
// that dials, asks for whole regions and resets in a loop so costs the
// server churnRate handshakes a second, not as many as its loops can
// make; clients that stay connected, and short-lived ones that connect,
// ask, take their answer and leave, however many, are never paced.
const (
	youngAge   = time.Second
	churnRate  = 50 // handshakes a second
	churnBurst = 32
	// penaltyCost: what a peer the server closes for breaking the
	// protocol is charged (fabric.Penalizer), in handshakes: a source
	// doing so in a loop is paced after churnBurst/penaltyCost of them.
	penaltyCost = 4
	readCharge  = 1 << 20 // bytes of a young peer's READs that cost a handshake
)

func newListener(ln *net.TCPListener, o fabric.Options, bells *eventbell.Set) *listener {
	l := &listener{o: o, bells: bells, addr: "tcp://" + ln.Addr().String()}
	var take acceptq.Take[*setup]
	if o.OnSetup != nil {
		take = func(ctx context.Context, s *setup) bool { return o.OnSetup(ctx, s) }
	}
	l.q = acceptq.NewTaking(ln, acceptq.Config{
		Prefix:     "fabric/tcp",
		MaxPending: maxPending,
		PerSource:  maxPerSource,
		MaxReady:   maxReady,
		Timeout:    handshakeTimeout,
		Source:     sourceIP,
		ChurnRate:  churnRate,
		ChurnBurst: churnBurst,
		Logf:       o.Logf,
		Arrived:    arrived,
	}, l.hello, func(s *setup) { _ = s.Close() }, take)
	return l
}

// arrived reports whether the dialer's whole hello waits on the socket,
// readable without blocking: the dialer sends it right after its connect,
// so the listener, woken by the connect, mostly finds it there, and the
// accept loop then runs the handshake itself (acceptq.Config.Arrived). A
// hello in part, or one that is not a hello, goes to a goroutine of its
// own: the loop must never wait on a peer.
func arrived(c net.Conn) bool {
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return false
	}
	var b [hsSize + fabric.MaxDialData]byte
	ok := false
	_ = rc.Control(func(fd uintptr) {
		n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		if err != nil || n < hsSize {
			return
		}
		h, err := parseHS(b[:n])
		ok = err == nil && h.kind == kindHello && h.version == version &&
			int(h.dataLen) <= fabric.MaxDialData && n >= hsSize+int(h.dataLen)
	})
	return ok
}

// sourceIP is the peer's address without its port.
func sourceIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return c.RemoteAddr().String()
}

func (l *listener) Addr() string { return l.addr }

// SyscallWaiters implements fabric.SyscallWaiters: the pollers wait in
// epoll_wait (poll.go); those made, or those the first connection makes.
func (l *listener) SyscallWaiters() int {
	if n := pollersMade.Load(); n > 0 {
		return int(n)
	}
	return numPollers()
}

// hello reads the dialer's hello under the queue's deadline.
func (l *listener) hello(_ context.Context, c net.Conn) (*setup, error) {
	nc := c.(*net.TCPConn)
	data, depth, err := readHello(nc)
	if err != nil {
		return nil, err
	}
	s := newSetup(nc, l.o)
	s.peerData, s.peerDepth, s.bells = data, depth, l.bells
	src := sourceIP(nc)
	s.vanished = func(cost float64) { l.q.Charge(src, cost) }
	return s, nil
}

func (l *listener) Accept(ctx context.Context) (fabric.Setup, error) {
	s, err := l.q.Accept(ctx)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (l *listener) Close() error {
	l.once.Do(func() {
		_ = l.q.Close()
		l.bells.Close()
	})
	return nil
}

// WaitBell implements fabric.Doorbells.
func (l *listener) WaitBell(i int, d time.Duration) (bool, error) {
	if l.bells == nil {
		return false, fmt.Errorf("fabric/tcp: listener has no doorbells")
	}
	return l.bells.WaitBell(i, d)
}

// RingBell implements fabric.Doorbells.
func (l *listener) RingBell(i int) error { return l.bells.RingBell(i) }

// TakeRingers implements fabric.RingSources.
func (l *listener) TakeRingers(i int, dst []int) []int { return l.bells.TakeRingers(i, dst) }

// BellRings implements fabric.RingCounter.
func (l *listener) BellRings(i int) uint64 { return l.bells.BellRings(i) }

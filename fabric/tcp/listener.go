package tcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// listener accepts sockets and runs each hello in its own goroutine, so a
// slow or stray client holds up nobody; only good hellos reach Accept.
type listener struct {
	ln     *net.TCPListener
	o      fabric.Options
	bells  *fabric.EventBells // nil without Options.Doorbells
	addr   string
	ready  chan *setup
	closed chan struct{}
	once   sync.Once
	wg     sync.WaitGroup

	// Sockets still in their hello, closed by Close so that it does not
	// wait out handshakeTimeout; at most maxHandshakes at once.
	hsMu sync.Mutex
	inHS map[*net.TCPConn]struct{}
}

// maxHandshakes bounds the sockets a listener holds before their hello:
// a flood of silent clients costs at most this many.
const maxHandshakes = 1024

func newListener(ln *net.TCPListener, o fabric.Options, bells *fabric.EventBells) *listener {
	l := &listener{
		bells:  bells,
		ln:     ln,
		o:      o,
		addr:   "tcp://" + ln.Addr().String(),
		ready:  make(chan *setup),
		closed: make(chan struct{}),
		inHS:   map[*net.TCPConn]struct{}{},
	}
	l.wg.Add(1)
	go l.acceptLoop()
	return l
}

func (l *listener) Addr() string { return l.addr }

func (l *listener) acceptLoop() {
	defer l.wg.Done()
	var delay time.Duration
	for {
		nc, err := l.ln.AcceptTCP()
		if err != nil {
			select {
			case <-l.closed:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors and the like: back off, as net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			time.Sleep(delay)
			continue
		}
		delay = 0
		l.hsMu.Lock()
		full := len(l.inHS) >= maxHandshakes
		if !full {
			l.inHS[nc] = struct{}{}
		}
		l.hsMu.Unlock()
		if full {
			_ = nc.Close()
			continue
		}
		l.wg.Add(1)
		go l.handshake(nc)
	}
}

func (l *listener) handshake(nc *net.TCPConn) {
	defer l.wg.Done()
	s := l.hello(nc)
	l.hsMu.Lock()
	delete(l.inHS, nc)
	l.hsMu.Unlock()
	if s == nil {
		return
	}
	select {
	case l.ready <- s:
	case <-l.closed:
		_ = s.Close()
	}
}

// hello reads the dialer's hello; nil (and the socket closed) if bad.
func (l *listener) hello(nc *net.TCPConn) *setup {
	if err := tune(nc); err != nil {
		_ = nc.Close()
		return nil
	}
	_ = nc.SetDeadline(time.Now().Add(handshakeTimeout))
	data, depth, err := readHello(nc)
	if err != nil {
		_ = nc.Close()
		return nil
	}
	// From here the application decides how long the dialer waits.
	_ = nc.SetDeadline(time.Time{})
	s := newSetup(nc, l.o, false)
	s.peerData, s.peerDepth, s.bells = data, depth, l.bells
	return s
}

func (l *listener) Accept(ctx context.Context) (fabric.Setup, error) {
	select {
	case <-l.closed:
		return nil, fabric.ErrClosed
	default:
	}
	select {
	case s := <-l.ready:
		return s, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.closed:
		return nil, fabric.ErrClosed
	}
}

func (l *listener) Close() error {
	l.once.Do(func() {
		close(l.closed)
		_ = l.ln.Close()
		l.hsMu.Lock()
		for nc := range l.inHS {
			_ = nc.Close()
		}
		l.hsMu.Unlock()
		l.wg.Wait()
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

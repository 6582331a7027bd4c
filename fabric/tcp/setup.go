package tcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/internal/eventbell"
	"golang.org/x/sys/unix"
)

// setup is a connection whose socket and domain exist and whose handshake
// is not done.
type setup struct {
	nc        *net.TCPConn
	d         *domain
	o         fabric.Options
	dialer    bool
	peerData  []byte         // acceptor: the dialer's hello data
	peerDepth int            // acceptor: the dialer's queue depth
	bells     *eventbell.Set // acceptor: the listener's doorbells
	vanished  func(float64)  // acceptor: the conn ended young, costing that much (churn pacing)

	mu    sync.Mutex
	state int // setupOpen, setupDone, setupClosed
}

const (
	setupOpen = iota
	setupDone
	setupClosed
)

func newSetup(nc *net.TCPConn, o fabric.Options, dialer bool) *setup {
	return &setup{nc: nc, d: newDomain(o.DomainSize), o: o, dialer: dialer}
}

func (s *setup) Alloc(size int) (*fabric.Region, error) { return s.d.alloc(size) }

func (s *setup) PeerData() []byte { return s.peerData }

// Close rejects (acceptor) or abandons (dialer) the setup and frees its
// regions; after Establish it does nothing.
func (s *setup) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != setupOpen {
		return nil
	}
	s.state = setupClosed
	if !s.dialer {
		_ = s.nc.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = s.nc.Write(putHS(nil, kindReject, 0, nil))
	}
	_ = s.nc.Close()
	s.d.closeAll()
	return nil
}

func (s *setup) Establish(ctx context.Context, data []byte) (fabric.Conn, error) {
	if err := fabric.CheckPrivateData(data, s.dialer); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case setupDone:
		return nil, errors.New("fabric/tcp: Establish called twice")
	case setupClosed:
		return nil, fabric.ErrClosed
	}
	// The context bounds the handshake through the socket's deadline,
	// and so does a bound of our own: the acceptor's answer is small and
	// the dialer's wait is for the listener's application to Accept.
	bound := dialWait
	if !s.dialer {
		bound = s.o.SendTimeout
	}
	dl := time.Now().Add(bound)
	if cdl, ok := ctx.Deadline(); ok && cdl.Before(dl) {
		dl = cdl
	}
	_ = s.nc.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { _ = s.nc.SetDeadline(time.Unix(1, 0)) })
	var c *conn
	var err error
	if s.dialer {
		c, err = s.dial(data)
	} else {
		c, err = s.accept(data)
	}
	if !stop() && err == nil {
		// The context ended as we finished; the deadline may be set.
		c.Close()
		c, err = nil, ctx.Err()
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("fabric/tcp: handshake: %w", ctx.Err())
		}
		s.state = setupClosed
		_ = s.nc.Close()
		s.d.closeAll()
		return nil, err
	}
	s.state = setupDone
	return c, nil
}

// dial sends the hello and reads the acceptor's answer.
func (s *setup) dial(data []byte) (*conn, error) {
	if _, err := s.nc.Write(putHS(nil, kindHello, s.o.QueueDepth, data)); err != nil {
		return nil, fmt.Errorf("%w: sending hello: %v", fabric.ErrPeerGone, err)
	}
	reply, depth, err := readReply(s.nc)
	if err != nil {
		return nil, err
	}
	return s.establish(reply, depth, nil)
}

// readReply is the dialer's side of the acceptor's answer. It reads
// exactly the reply: what follows belongs to the conn.
func readReply(nc net.Conn) (reply []byte, depth int, err error) {
	var hb [hsSize]byte
	n, err := io.ReadFull(nc, hb[:])
	// A listener that sheds a handshake (too many pending) closes the
	// socket with our hello unread: the close arrives as a reset.
	if n == 0 && (err == io.EOF || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET)) {
		return nil, 0, fmt.Errorf("%w: listener closed the connection without answering", fabric.ErrRejected)
	}
	if err != nil && n == 0 {
		return nil, 0, fmt.Errorf("%w: reading handshake reply: %v", fabric.ErrPeerGone, err)
	}
	h, perr := parseHS(hb[:n])
	if perr != nil {
		return nil, 0, fmt.Errorf("fabric/tcp: %s: %v", nc.RemoteAddr(), perr)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%w: reading handshake reply: %v", fabric.ErrPeerGone, err)
	}
	reply = make([]byte, h.dataLen)
	if _, err := io.ReadFull(nc, reply); err != nil {
		return nil, 0, fmt.Errorf("%w: reading handshake reply: %v", fabric.ErrPeerGone, err)
	}
	switch {
	case h.kind == kindBadVersion:
		return nil, 0, fmt.Errorf("fabric/tcp: %s speaks protocol version %d, this dialer %d", nc.RemoteAddr(), h.version, version)
	case h.kind == kindBadHello:
		return nil, 0, fmt.Errorf("fabric/tcp: %s refused the hello: %q", nc.RemoteAddr(), reply)
	case h.kind == kindReject:
		return nil, 0, fabric.ErrRejected
	case h.version != version || h.kind != kindAccept:
		return nil, 0, fmt.Errorf("fabric/tcp: %s: unexpected handshake reply (version %d, kind %d)", nc.RemoteAddr(), h.version, h.kind)
	case len(reply) > fabric.MaxAcceptData:
		return nil, 0, fmt.Errorf("fabric/tcp: %s: accept data of %d bytes exceeds %d", nc.RemoteAddr(), len(reply), fabric.MaxAcceptData)
	}
	return reply, int(h.depth), nil
}

// establish moves the socket to the provider's poller as a conn.
func (s *setup) establish(peerData []byte, peerDepth int, bells *eventbell.Set) (*conn, error) {
	fd, err := detach(s.nc)
	if err != nil {
		return nil, err
	}
	c, err := newConn(fd, s.d, s.o, peerData, peerDepth, bells, s.vanished)
	if err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return c, nil
}

func (s *setup) accept(data []byte) (*conn, error) {
	if _, err := s.nc.Write(putHS(nil, kindAccept, s.o.QueueDepth, data)); err != nil {
		return nil, fmt.Errorf("%w: sending accept: %v", fabric.ErrPeerGone, err)
	}
	return s.establish(s.peerData, s.peerDepth, s.bells)
}

// readHello is the acceptor's side of the hello. A bad hello gets a reply
// saying why (readable by a stray client too) and an error.
func readHello(nc net.Conn) (data []byte, depth int, err error) {
	var hb [hsSize]byte
	if _, err := io.ReadFull(nc, hb[:]); err != nil {
		return nil, 0, fmt.Errorf("fabric/tcp: reading hello: %w", err)
	}
	refuse := func(why string) error {
		_, _ = nc.Write(putHS(nil, kindBadHello, 0, []byte(why)))
		return fmt.Errorf("fabric/tcp: bad hello from %s: %s", nc.RemoteAddr(), why)
	}
	h, err := parseHS(hb[:])
	if err != nil {
		return nil, 0, refuse("expected a jakiro fabric/tcp hello (magic " + magic + ")")
	}
	if h.version != version {
		_, _ = nc.Write(putHS(nil, kindBadVersion, 0, nil))
		return nil, 0, fmt.Errorf("fabric/tcp: hello from %s speaks version %d, we %d", nc.RemoteAddr(), h.version, version)
	}
	if h.kind != kindHello {
		return nil, 0, refuse(fmt.Sprintf("expected hello, got message kind %d", h.kind))
	}
	if int(h.dataLen) > fabric.MaxDialData {
		return nil, 0, refuse(fmt.Sprintf("private data of %d bytes exceeds %d", h.dataLen, fabric.MaxDialData))
	}
	data = make([]byte, h.dataLen)
	if _, err := io.ReadFull(nc, data); err != nil {
		return nil, 0, fmt.Errorf("fabric/tcp: reading hello: %w", err)
	}
	return data, int(h.depth), nil
}

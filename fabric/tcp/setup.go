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
	nc        *net.TCPConn // acceptor
	ds        *dialSock    // dialer
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

func newSetup(nc *net.TCPConn, o fabric.Options) *setup {
	return &setup{nc: nc, d: newDomain(o.DomainSize), o: o}
}

func newDialSetup(ds *dialSock, o fabric.Options) *setup {
	return &setup{ds: ds, d: newDomain(o.DomainSize), o: o, dialer: true}
}

// closeSock closes the socket of a setup that did not establish.
func (s *setup) closeSock() {
	if s.dialer {
		s.ds.close()
		return
	}
	_ = s.nc.Close()
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
	s.closeSock()
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
	var c *conn
	var err error
	if s.dialer {
		c, err = s.dial(ctx, data)
	} else {
		c, err = s.acceptBounded(ctx, data)
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("fabric/tcp: handshake: %w", ctx.Err())
		}
		s.state = setupClosed
		s.closeSock()
		s.d.closeAll()
		return nil, err
	}
	s.state = setupDone
	return c, nil
}

// acceptBounded answers the hello within ctx and SendTimeout (the
// answer is small: only a peer that stopped reading makes it wait).
func (s *setup) acceptBounded(ctx context.Context, data []byte) (*conn, error) {
	dl := time.Now().Add(s.o.SendTimeout)
	if cdl, ok := ctx.Deadline(); ok && cdl.Before(dl) {
		dl = cdl
	}
	_ = s.nc.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { _ = s.nc.SetDeadline(time.Unix(1, 0)) })
	c, err := s.accept(data)
	// A context that ends as we finish changes nothing once the accept is
	// out: the dialer has its answer and the socket is detached (a
	// deadline set on it now touches nothing), so the connection stands.
	// Closing it stranded the dialer: joined, then "closed by peer" at its
	// first request, seen under bursts of joins on 2 cores.
	stop()
	return c, err
}

// dial sends the hello and reads the acceptor's answer on the calling
// thread (dialsock.go), within ctx and dialWait: the dialer's wait is
// for the listener's application to answer.
func (s *setup) dial(ctx context.Context, data []byte) (*conn, error) {
	ds := s.ds
	// The socket's timeouts, set at the connect (dialWait at most), bound
	// each wait still; the context's end shuts the socket down (watch).
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ds.watch(ctx)
	nc := ds.conn()
	if _, err := nc.Write(putHS(nil, kindHello, s.o.QueueDepth, data)); err != nil {
		return nil, fmt.Errorf("%w: sending hello: %v", fabric.ErrPeerGone, err)
	}
	reply, depth, err := readReply(nc)
	if err != nil {
		return nil, err
	}
	fd, ok := ds.release()
	if !ok {
		_ = unix.Close(fd)
		return nil, ctx.Err()
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("fabric/tcp: non-blocking mode: %w", err)
	}
	c, err := newConn(fd, s.d, s.o, reply, depth, nil, nil)
	if err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	c.dialedLoopback = ds.peer.IsLoopback()
	return c, nil
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

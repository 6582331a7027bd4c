package shm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/internal/eventbell"
	"github.com/jakiro-kv/jakiro/fabric/internal/readypool"
)

// setup is a connection whose domain exists and whose handshake is not
// done. On the acceptor side the dialer's hello (private data and mapped
// domain) has already arrived.
type setup struct {
	d        *domain       // dialer that borrows its domain: nil until established
	sock     *net.UnixConn // acceptor: from the listener
	dial     *os.File      // dialer: its socket (dialSock), outside the runtime's poller
	opts     fabric.Options
	acceptor bool
	peerData []byte                     // acceptor: the dialer's private data
	peer     []byte                     // acceptor: the dialer's mapped domain
	bells    []int                      // acceptor: the listener's doorbells, sent with accept
	pool     *readypool.Pool[readyPair] // acceptor: refilled once the accept is sent or the setup closed
	lent     *domain                    // acceptor: made for a dialer that borrows its domain; its mem is peer, its fd goes with the accept
	set      *eventbell.Set             // acceptor: names the dialer's rings

	mu    sync.Mutex
	state int // setupOpen, setupDone, setupClosed
}

const (
	setupOpen = iota
	setupDone
	setupClosed
)

func (s *setup) Alloc(size int) (*fabric.Region, error) {
	if s.d == nil {
		return nil, errors.New("shm: a borrowed domain (Options.BorrowDomain) has regions once the connection is established")
	}
	return s.d.alloc(size)
}

func (s *setup) PeerData() []byte {
	if !s.acceptor {
		return nil
	}
	return s.peerData
}

func (s *setup) Establish(ctx context.Context, data []byte) (fabric.Conn, error) {
	if err := fabric.CheckPrivateData(data, !s.acceptor); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != setupOpen {
		return nil, fabric.ErrClosed
	}
	if s.acceptor {
		// The pool makes the next domain once our accept is on its
		// way, not while we send it (readypool.TakeLater).
		defer s.pool.Refill()
		stop := bindContext(ctx, s.sock)
		defer stop()
		src := s.set.AllocSource()
		var b [sourceBytes + fabric.MaxAcceptData]byte
		binary.LittleEndian.PutUint32(b[:], uint32(int32(src)))
		n := sourceBytes + copy(b[sourceBytes:], data)
		typ, fds := byte(msgAccept), s.bells
		if s.lent != nil {
			typ, fds = msgAcceptLent, append([]int{s.lent.fd}, s.bells...)
		}
		if err := sendMsg(s.sock, typ, b[:n], s.d.fd, fds...); err != nil {
			s.set.FreeSource(src)
			s.abort()
			return nil, ctxErr(ctx, fmt.Errorf("shm: send accept: %w", err))
		}
		s.dropLent() // the dialer has it; our mapping keeps the file
		if err := s.finish(ctx, stop); err != nil {
			s.set.FreeSource(src)
			return nil, err
		}
		c := newConn(s.d, s.peer, s.peerData, s.sock, s.opts, nil, false)
		c.set, c.source = s.set, src
		return c, nil
	}
	hello, fd := byte(msgHelloBorrow), -1
	if s.d != nil {
		hello, fd = msgHello, s.d.fd
	}
	if err := sendMsgFD(int(s.dial.Fd()), hello, data, fd); err != nil {
		s.abort()
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			// The listener shed this handshake (it holds a bounded
			// number) before our hello arrived.
			return nil, fmt.Errorf("%w: acceptor closed the socket before the hello", fabric.ErrRejected)
		}
		return nil, ctxErr(ctx, fmt.Errorf("shm: send hello: %w", err))
	}
	m, err := recvMsgFD(ctx, int(s.dial.Fd()), acceptSpin)
	if err != nil {
		s.abort()
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			return nil, fmt.Errorf("%w: acceptor closed the socket", fabric.ErrRejected)
		}
		return nil, ctxErr(ctx, err)
	}
	accept := byte(msgAccept)
	if s.d == nil {
		accept = msgAcceptLent
	}
	switch m.typ {
	case accept:
	case msgReject:
		s.abort()
		return nil, fabric.ErrRejected
	default:
		m.close()
		s.abort()
		return nil, fmt.Errorf("%w: unexpected message type %d", errProtocol, m.typ)
	}
	if len(m.data) < sourceBytes {
		m.close()
		s.abort()
		return nil, fmt.Errorf("%w: accept of %d bytes, without its ring source", errProtocol, len(m.data))
	}
	src := int(int32(binary.LittleEndian.Uint32(m.data)))
	m.data = m.data[sourceBytes:]
	// The acceptor's domain is its DomainSize (rfp: sized to one grant):
	// mapped whole.
	peer, err := mapPeer(m.fd, maxDomainSize, maxDomainSize)
	m.fd = -1 // closed
	if err != nil {
		m.close()
		s.abort()
		return nil, err
	}
	s.peer = peer // freed by abort on failure
	if s.d == nil {
		d, err := adoptDomain(m.lent)
		m.lent = -1 // closed
		if err != nil {
			m.close()
			s.abort()
			return nil, err
		}
		s.d = d
	}
	bells, err := eventbell.Open(m.bells, src)
	if err != nil {
		s.abort()
		return nil, fmt.Errorf("%w: %v", errProtocol, err)
	}
	if ctx.Err() != nil {
		bells.Close()
		s.abort()
		return nil, ctxErr(ctx, errors.New("shm: handshake interrupted"))
	}
	s.state = setupDone
	return newConn(s.d, peer, m.data, s.dial, s.opts, bells, true), nil
}

// acceptSpin is how long a dialer polls for its accept before it waits parked:
// a listener with a ready domain answers in tens of microseconds, less
// than it takes to wake a parked thread on a small virtual machine.
const acceptSpin = 200 * time.Microsecond

// finish detaches ctx from the socket for good. If ctx fired meanwhile its
// deadline may land at any time, so the connection is given up. s.mu held.
func (s *setup) finish(ctx context.Context, stop func() bool) error {
	if !stop() {
		s.abort()
		return ctxErr(ctx, errors.New("shm: handshake interrupted"))
	}
	if err := s.sock.SetDeadline(time.Time{}); err != nil {
		s.abort()
		return fmt.Errorf("shm: clear deadline: %w", err)
	}
	s.state = setupDone
	return nil
}

// Close abandons the setup; on the acceptor side it rejects the dialer.
func (s *setup) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != setupOpen {
		return nil
	}
	if s.acceptor {
		// Unmap first: once rejected, the dialer may count on it.
		if s.peer != nil {
			unix.Munmap(s.peer)
			s.peer = nil
		}
		s.sock.SetDeadline(time.Now().Add(time.Second))
		sendMsg(s.sock, msgReject, nil, -1) // best effort: EOF says as much
		defer s.pool.Refill()
	}
	s.abort()
	return nil
}

// abort frees everything. s.mu held.
func (s *setup) abort() {
	s.state = setupClosed
	if s.dial != nil {
		s.dial.Close()
	} else {
		s.sock.Close()
	}
	if s.peer != nil {
		unix.Munmap(s.peer)
		s.peer = nil
	}
	s.dropLent()
	if s.d != nil {
		s.d.close()
	}
}

// dropLent closes the memfd of the domain lent to the dialer, if any (its
// mapping is s.peer). s.mu held.
func (s *setup) dropLent() {
	if s.lent != nil {
		unix.Close(s.lent.fd)
		s.lent = nil
	}
}

// bindContext makes socket I/O obey ctx (deadline and cancellation).
func bindContext(ctx context.Context, c *net.UnixConn) (stop func() bool) {
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	return context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
}

func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%w (%v)", cerr, err)
	}
	return err
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

package shm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/internal/acceptq"
	"github.com/jakiro-kv/jakiro/fabric/internal/eventbell"
	"github.com/jakiro-kv/jakiro/fabric/internal/readypool"
)

// Handshake bounds. Only users the socket file's mode lets in can
// connect, so these only hold up a local flood; a pending hello holds a
// socket, a handshaken setup also two mapped domains.
const (
	maxPending       = 256 // hellos being read at once
	maxReady         = 128 // setups waiting for Accept
	handshakeTimeout = 5 * time.Second
)

// listener hands the sockets it accepts to an acceptq.Queue, which runs
// each hello in its own goroutine under a timeout; only good hellos reach
// Accept.
type listener struct {
	path  string
	addr  string
	opts  fabric.Options
	q     *acceptq.Queue[*setup]
	bells *eventbell.Set             // nil without Options.Doorbells
	ready *readypool.Pool[readyPair] // nil without Options.Ready (ready.go)
	once  sync.Once
}

// listen binds a SOCK_SEQPACKET unix socket at path with the given file
// mode. The mode is set between bind and listen: until listen, connects
// are refused, so no dialer ever sees a more permissive socket.
func listen(path string, mode os.FileMode, o fabric.Options) (*listener, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("shm: socket: %w", err)
	}
	err = unix.Bind(fd, &unix.SockaddrUnix{Name: path})
	if errors.Is(err, unix.EADDRINUSE) && removeStale(path) {
		err = unix.Bind(fd, &unix.SockaddrUnix{Name: path})
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("shm: bind %s: %w", path, err)
	}
	if err := unix.Chmod(path, uint32(mode.Perm())); err != nil {
		unix.Close(fd)
		os.Remove(path)
		return nil, fmt.Errorf("shm: chmod %s: %w", path, err)
	}
	if err := unix.Listen(fd, 1024); err != nil {
		unix.Close(fd)
		os.Remove(path)
		return nil, fmt.Errorf("shm: listen %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	nl, err := net.FileListener(f)
	f.Close()
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("shm: listener %s: %w", path, err)
	}
	ul, ok := nl.(*net.UnixListener)
	if !ok {
		nl.Close()
		os.Remove(path)
		return nil, fmt.Errorf("shm: listener %s is a %T", path, nl)
	}
	var bells *eventbell.Set
	if o.Doorbells > 0 {
		if o.Doorbells > min(fabric.MaxDoorbells, maxBells) {
			ul.Close()
			return nil, fmt.Errorf("shm: %d doorbells, at most %d (one fd message carries them)", o.Doorbells, min(fabric.MaxDoorbells, maxBells))
		}
		if bells, err = eventbell.New(o.Doorbells); err != nil {
			ul.Close()
			return nil, err
		}
	}
	l := &listener{bells: bells, path: path, addr: "shm://" + path, opts: o}
	if o.Ready > 0 {
		if l.ready, err = newReadyPool(o.Ready, o.DomainSize); err != nil {
			ul.Close()
			bells.Close()
			return nil, err
		}
	}
	var take acceptq.Take[*setup]
	if o.OnSetup != nil {
		take = func(ctx context.Context, s *setup) bool { return o.OnSetup(ctx, s) }
	}
	l.q = acceptq.NewTaking(ul, acceptq.Config{
		Prefix:     "shm",
		MaxPending: maxPending,
		MaxReady:   maxReady,
		Timeout:    handshakeTimeout,
		Logf:       o.Logf,
		Arrived:    arrived,
	}, l.hello, func(s *setup) { _ = s.Close() }, take)
	return l, nil
}

// arrived reports whether a message waits on the socket: the dialer
// sends its hello right after connecting, so the listener, woken by the
// connect, mostly finds it there.
func arrived(nc net.Conn) bool {
	rc, err := nc.(*net.UnixConn).SyscallConn()
	if err != nil {
		return false
	}
	var b [1]byte
	ok := false
	rc.Control(func(fd uintptr) {
		n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		ok = err == nil && n > 0
	})
	return ok
}

// removeStale removes path if it is a socket nobody listens on.
func removeStale(path string) bool {
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return false
	}
	c, err := net.DialTimeout("unixpacket", path, time.Second)
	if err == nil {
		c.Close()
		return false
	}
	if !errors.Is(err, unix.ECONNREFUSED) {
		return false
	}
	return os.Remove(path) == nil
}

// hello takes a dialer's hello, maps its domain (or takes one to lend
// it, helloBorrow) and takes the acceptor's, under the queue's deadline. A
// dialer turned away for want of memory is told so (ErrRejected) rather
// than left to guess from EOF.
func (l *listener) hello(_ context.Context, nc net.Conn) (*setup, error) {
	c := nc.(*net.UnixConn)
	m, err := recvMsg(c)
	if err != nil {
		return nil, err
	}
	if m.typ != msgHello && m.typ != msgHelloBorrow {
		m.close()
		return nil, fmt.Errorf("shm: message %d where a hello belongs", m.typ)
	}
	if l.opts.OnHello != nil {
		l.opts.OnHello()
	}
	var peer []byte
	if m.typ == msgHello {
		// This side addresses, in the dialer's domain, no more than its own
		// DomainSize (rfp: the reply mirror of its grant), so it maps no more.
		if peer, err = mapPeer(m.fd, MaxDialerDomain, pageRound(min(l.opts.DomainSize, maxDomainSize))); err != nil {
			sendMsg(c, msgReject, nil, -1)
			return nil, err
		}
	}
	d, lent, err := takeDomains(l.ready, l.opts.DomainSize, m.typ == msgHelloBorrow)
	if err != nil {
		if peer != nil {
			unix.Munmap(peer)
		}
		sendMsg(c, msgReject, nil, -1)
		return nil, err
	}
	if lent != nil {
		peer = lent.mem // the dialer's domain as this side maps it
	}
	return &setup{d: d, sock: c, opts: l.opts, acceptor: true, peerData: m.data, peer: peer, lent: lent,
		bells: l.bells.Share(), set: l.bells, pool: l.ready}, nil
}

func (l *listener) Accept(ctx context.Context) (fabric.Setup, error) {
	s, err := l.q.Accept(ctx)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (l *listener) Addr() string { return l.addr }

// Close stops accepting, rejects setups nobody accepted and removes the
// socket file. Established connections are not affected.
func (l *listener) Close() error {
	l.once.Do(func() {
		_ = l.q.Close()
		os.Remove(l.path)
		l.bells.Close()
		l.ready.Close()
	})
	return nil
}

// ReadyStats implements fabric.ReadyCounter.
func (l *listener) ReadyStats() fabric.ReadyStats { return l.ready.Stats() }

// WaitBell implements fabric.Doorbells.
func (l *listener) WaitBell(i int, d time.Duration) (bool, error) {
	if l.bells == nil {
		return false, fmt.Errorf("shm: listener has no doorbells")
	}
	return l.bells.WaitBell(i, d)
}

// BellRings implements fabric.RingCounter.
func (l *listener) BellRings(i int) uint64 { return l.bells.BellRings(i) }

// RingBell implements fabric.Doorbells.
func (l *listener) RingBell(i int) error { return l.bells.RingBell(i) }

// TakeRingers implements fabric.RingSources.
func (l *listener) TakeRingers(i int, dst []int) []int { return l.bells.TakeRingers(i, dst) }

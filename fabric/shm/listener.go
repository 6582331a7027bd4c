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
)

// maxWaiting bounds setups (each holding two mapped domains) that
// completed their hello but were not accepted yet; beyond it dialers are
// rejected rather than piling up.
const maxWaiting = 128

// handshakeTimeout bounds how long an accepted socket may take to send
// its hello; a silent dialer cannot pin resources forever.
const handshakeTimeout = 30 * time.Second

type listener struct {
	path  string
	addr  string
	opts  fabric.Options
	ln    *net.UnixListener
	bells *fabric.EventBells // nil without Options.Doorbells

	ctx     context.Context // canceled by Close
	cancel  context.CancelFunc
	pending chan *setup
	waiting chan struct{} // a token per handshaken setup not yet accepted
	wg      sync.WaitGroup

	errMu   sync.Mutex
	loopErr error // why the accept loop died, if not Close

	closeOnce sync.Once
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
	var bells *fabric.EventBells
	if o.Doorbells > 0 {
		if o.Doorbells > fabric.MaxDoorbells {
			ul.Close()
			return nil, fmt.Errorf("shm: %d doorbells, at most %d", o.Doorbells, fabric.MaxDoorbells)
		}
		if bells, err = fabric.NewEventBells(o.Doorbells); err != nil {
			ul.Close()
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &listener{
		bells:   bells,
		path:    path,
		addr:    "shm://" + path,
		opts:    o,
		ln:      ul,
		ctx:     ctx,
		cancel:  cancel,
		pending: make(chan *setup, 16),
		waiting: make(chan struct{}, maxWaiting),
	}
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
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

func (l *listener) acceptLoop() {
	defer l.wg.Done()
	for {
		c, err := l.ln.AcceptUnix()
		if err != nil {
			if l.ctx.Err() != nil {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) || errors.Is(err, unix.ECONNABORTED) {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			l.errMu.Lock()
			l.loopErr = err
			l.errMu.Unlock()
			l.cancel()
			return
		}
		l.wg.Add(1)
		go l.handshake(c)
	}
}

// handshake takes a dialer's hello and queues its Setup for Accept.
func (l *listener) handshake(c *net.UnixConn) {
	defer l.wg.Done()
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	stop := context.AfterFunc(l.ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	m, err := recvMsg(c)
	if err != nil || m.typ != msgHello {
		if m.fd >= 0 {
			unix.Close(m.fd)
		}
		c.Close()
		return
	}
	select {
	case l.waiting <- struct{}{}:
	default:
		unix.Close(m.fd)
		sendMsg(c, msgReject, nil, -1)
		c.Close()
		return
	}
	peer, err := mapPeer(m.fd)
	if err != nil {
		<-l.waiting
		sendMsg(c, msgReject, nil, -1)
		c.Close()
		return
	}
	d, err := newDomain(l.opts.DomainSize)
	if err != nil {
		<-l.waiting
		unix.Munmap(peer)
		sendMsg(c, msgReject, nil, -1)
		c.Close()
		return
	}
	s := &setup{d: d, sock: c, opts: l.opts, acceptor: true, peerData: m.data, peer: peer, bells: l.bells.FDs()}
	select {
	case l.pending <- s:
	case <-l.ctx.Done():
		<-l.waiting
		s.Close()
	}
}

func (l *listener) Accept(ctx context.Context) (fabric.Setup, error) {
	select {
	case s := <-l.pending:
		<-l.waiting
		return s, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.ctx.Done():
	}
	l.errMu.Lock()
	defer l.errMu.Unlock()
	if l.loopErr != nil {
		return nil, fmt.Errorf("shm: accept: %w", l.loopErr)
	}
	return nil, fabric.ErrClosed
}

func (l *listener) Addr() string { return l.addr }

// Close stops accepting, rejects setups nobody accepted and removes the
// socket file. Established connections are not affected.
func (l *listener) Close() error {
	l.closeOnce.Do(func() {
		l.cancel()
		l.ln.Close()
		l.wg.Wait()
		for {
			select {
			case s := <-l.pending:
				<-l.waiting
				s.Close()
				continue
			default:
			}
			break
		}
		os.Remove(l.path)
		l.bells.Close()
	})
	return nil
}

// WaitBell implements fabric.Doorbells.
func (l *listener) WaitBell(i int, d time.Duration) (bool, error) {
	if l.bells == nil {
		return false, fmt.Errorf("shm: listener has no doorbells")
	}
	return l.bells.WaitBell(i, d)
}

// RingBell implements fabric.Doorbells.
func (l *listener) RingBell(i int) error { return l.bells.RingBell(i) }

package tcp

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/jakiro-kv/jakiro/fabric/internal/fdhint"
	"golang.org/x/sys/unix"
)

// The dialer's side of a join runs on the dialing thread alone: a
// blocking socket connects, sends the hello and waits for the answer in
// the kernel, so the thread that sent the hello is the one the answer
// wakes. Through Go's netpoller each of those waits parks the goroutine
// and a netpoller thread wakes it, often another thread on another core:
// tens of microseconds a step on a small machine. Every wait is bounded
// by the socket's timeouts (the context's deadline, or dialWait), and a
// context canceled without a deadline shuts the socket down, which ends
// any wait on it. After the handshake the socket goes non-blocking to the
// provider's poller, as the acceptor's does.

// dialSock is a dialer's socket during its handshake.
type dialSock struct {
	fd     int
	remote net.Addr
	peer   netip.Addr // remote's IP

	mu   sync.Mutex // orders the context's shutdown against handing fd over
	done bool       // fd is handed over or closed: the context leaves it alone
	stop func() bool
}

// dialFD resolves hp and connects a blocking socket to the first address
// that answers, within ctx (and dialWait).
func dialFD(ctx context.Context, hp string) (*dialSock, error) {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		return nil, fmt.Errorf("fabric/tcp: %w", err)
	}
	pn, err := net.DefaultResolver.LookupPort(ctx, "tcp", port)
	if err != nil {
		return nil, fmt.Errorf("fabric/tcp: %w", err)
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else if ips, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host); err != nil {
		return nil, fmt.Errorf("fabric/tcp: %w", err)
	}
	var first error
	for _, ip := range ips {
		s, err := connectFD(ctx, netip.AddrPortFrom(ip.Unmap(), uint16(pn)))
		if err == nil {
			return s, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if first == nil {
		first = fmt.Errorf("no address for %s", host)
	}
	return nil, fmt.Errorf("fabric/tcp: %w", fdhint.Explain(first))
}

func connectFD(ctx context.Context, ap netip.AddrPort) (*dialSock, error) {
	var sa unix.Sockaddr
	family := unix.AF_INET
	if ap.Addr().Is4() {
		sa = &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	} else {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	s := &dialSock{fd: fd, remote: net.TCPAddrFromAddrPort(ap), peer: ap.Addr()}
	if err := tuneFD(fd); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	s.watch(ctx)
	if err := s.bound(ctx); err != nil {
		s.close()
		return nil, err
	}
	for {
		err = unix.Connect(fd, sa)
		if err != unix.EINTR {
			break
		}
	}
	if err == nil && !s.unwatch() {
		err = ctx.Err()
	}
	if err != nil {
		s.close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err == unix.EINPROGRESS || err == unix.EAGAIN {
			err = os.ErrDeadlineExceeded // SO_SNDTIMEO ran out
		}
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: s.remote, Err: os.NewSyscallError("connect", err)}
	}
	return s, nil
}

// watch shuts the socket down when ctx ends, until it is handed over.
func (s *dialSock) watch(ctx context.Context) {
	if ctx.Done() == nil {
		return
	}
	s.stop = context.AfterFunc(ctx, func() {
		s.mu.Lock()
		if !s.done {
			_ = unix.Shutdown(s.fd, unix.SHUT_RDWR)
		}
		s.mu.Unlock()
	})
}

// unwatch stops watching the context; false if it ended meanwhile (the
// socket is shut down).
func (s *dialSock) unwatch() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop == nil {
		return true
	}
	ok := s.stop()
	s.stop = nil
	return ok
}

// bound sets the socket's send and receive timeouts to what is left of
// ctx's deadline, dialWait at most.
func (s *dialSock) bound(ctx context.Context) error {
	d := dialWait
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl))
	}
	if d <= 0 {
		return context.DeadlineExceeded
	}
	tv := unix.NsecToTimeval(max(d, time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
		return os.NewSyscallError("setsockopt", err)
	}
	if err := unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return os.NewSyscallError("setsockopt", err)
	}
	return nil
}

// release hands the descriptor over (ok) or reports that the context
// shut it down meanwhile.
func (s *dialSock) release() (fd int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	if s.stop != nil && !s.stop() {
		return s.fd, false
	}
	s.stop = nil
	return s.fd, true
}

// close closes the socket (once; after release it does nothing).
func (s *dialSock) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	s.done = true
	if s.stop != nil {
		s.stop()
	}
	_ = unix.Close(s.fd)
}

// conn is the socket as readReply's net.Conn: Read, Write and RemoteAddr
// only, blocking within the socket's timeouts.
func (s *dialSock) conn() net.Conn { return sockConn{s: s} }

type sockConn struct {
	net.Conn // not implemented: readReply uses none of the rest
	s        *dialSock
}

func (c sockConn) RemoteAddr() net.Addr { return c.s.remote }

func (c sockConn) Read(p []byte) (int, error) {
	for {
		n, err := unix.Read(c.s.fd, p)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return 0, os.ErrDeadlineExceeded // SO_RCVTIMEO ran out
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (c sockConn) Write(p []byte) (int, error) {
	sent := 0
	for sent < len(p) {
		n, err := unix.SendmsgN(c.s.fd, p[sent:], nil, nil, unix.MSG_NOSIGNAL)
		if n > 0 {
			sent += n
		}
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return sent, os.ErrDeadlineExceeded
		case err != nil:
			return sent, err
		}
	}
	return sent, nil
}

// sockOpts is what the fabric needs of a socket: no Nagle delay (a batch
// is one write already), and prompt detection of a vanished peer host.
// They are set on a dialer's socket and on the listening one, whose
// accepted sockets inherit them (Linux copies the listener's socket into
// each; TestAcceptedSocketOptions): an accept so makes none of these six
// system calls on the join's path.
var sockOpts = [...]struct {
	level, opt, v int
	name          string
}{
	{unix.IPPROTO_TCP, unix.TCP_NODELAY, 1, "TCP_NODELAY"},
	{unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1, "SO_KEEPALIVE"},
	{unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, int(KeepAliveIdle / time.Second), "TCP_KEEPIDLE"},
	{unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, int(KeepAliveInterval / time.Second), "TCP_KEEPINTVL"},
	{unix.IPPROTO_TCP, unix.TCP_KEEPCNT, KeepAliveCount, "TCP_KEEPCNT"},
	{unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(UserTimeout.Milliseconds()), "TCP_USER_TIMEOUT"},
}

// tuneFD sets sockOpts on a dialer's or a listener's socket.
func tuneFD(fd int) error {
	for _, o := range sockOpts {
		if err := unix.SetsockoptInt(fd, o.level, o.opt, o.v); err != nil {
			return fmt.Errorf("fabric/tcp: %s: %w", o.name, err)
		}
	}
	return nil
}

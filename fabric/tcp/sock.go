package tcp

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// After the handshake the connection leaves the Go netpoller: the reader
// blocks in read(2) on its own thread. A netpoll wakeup only runs once a P
// is free, and applications busy-poll Poll on every P, so a netpoll reader
// would wait for sysmon (up to 10ms); a thread returning from a syscall
// gets back in through the run queue at the next Gosched.

// sock is a connected TCP socket in blocking mode.
type sock struct{ fd int }

// detach takes nc's socket out of the netpoller as a blocking,
// close-on-exec descriptor, and closes nc.
func detach(nc *net.TCPConn) (sock, error) {
	rc, err := nc.SyscallConn()
	if err != nil {
		return sock{}, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(f uintptr) {
		fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return sock{}, err
	}
	if derr != nil {
		return sock{}, fmt.Errorf("fabric/tcp: dup: %w", derr)
	}
	_ = nc.Close()
	if err := unix.SetNonblock(fd, false); err != nil {
		_ = unix.Close(fd)
		return sock{}, fmt.Errorf("fabric/tcp: blocking mode: %w", err)
	}
	return sock{fd}, nil
}

func (s sock) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := unix.Read(s.fd, p)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// send writes p, blocking unless try; it returns how much went out.
// MSG_NOSIGNAL: a dead peer is an error, not a SIGPIPE.
func (s sock) send(p []byte, try bool) (int, error) {
	flags := unix.MSG_NOSIGNAL
	if try {
		flags |= unix.MSG_DONTWAIT
	}
	sent := 0
	for sent < len(p) {
		n, err := unix.SendmsgN(s.fd, p[sent:], nil, nil, flags)
		if n > 0 {
			sent += n
		}
		switch {
		case err == unix.EINTR:
			continue
		case try && errors.Is(err, unix.EAGAIN):
			return sent, nil
		case errors.Is(err, unix.EAGAIN):
			// Blocking send only times out with SO_SNDTIMEO, set by Close.
			return sent, fmt.Errorf("send timed out: %w", err)
		case err != nil:
			return sent, err
		}
	}
	return sent, nil
}

// shutdown wakes the reader and any blocked sender; the descriptor stays
// valid until close.
func (s sock) shutdown(how int) { _ = unix.Shutdown(s.fd, how) }

func (s sock) close() { _ = unix.Close(s.fd) }

func (s sock) setSendTimeout(d time.Duration) {
	tv := unix.NsecToTimeval(d.Nanoseconds())
	_ = unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
}

// outBuf is the socket's write side, used under conn.wmu: bytes are
// queued in buf[start:] and sent in as few syscalls as possible. Writers
// that may block (Post, the sender) use put and flush; the reader, which
// must never block on the peer, uses room and tryFlush.
type outBuf struct {
	s     sock
	buf   []byte
	start int
}

func (o *outBuf) room() int { return cap(o.buf) - len(o.buf) }

// put queues p, sending what is queued first if p does not fit; p larger
// than the buffer goes straight out.
func (o *outBuf) put(p []byte) error {
	if len(p) <= o.room() {
		o.buf = append(o.buf, p...)
		return nil
	}
	if err := o.flush(); err != nil {
		return err
	}
	if len(p) <= o.room() {
		o.buf = append(o.buf, p...)
		return nil
	}
	_, err := o.s.send(p, false)
	return err
}

func (o *outBuf) flush() error {
	if o.start == len(o.buf) {
		o.buf, o.start = o.buf[:0], 0
		return nil
	}
	_, err := o.s.send(o.buf[o.start:], false)
	o.buf, o.start = o.buf[:0], 0
	return err
}

// tryFlush sends what the socket takes now; it reports whether all went.
func (o *outBuf) tryFlush() (bool, error) {
	n, err := o.s.send(o.buf[o.start:], true)
	o.start += n
	if o.start == len(o.buf) {
		o.buf, o.start = o.buf[:0], 0
		return true, err
	}
	return false, err
}

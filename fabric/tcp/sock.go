package tcp

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// After the handshake a connection's socket leaves Go's netpoller for the
// provider's own (poll.go): its descriptor stays non-blocking, and every
// read and send on it is a single non-blocking syscall made under the
// connection's rx or tx lock, so nothing ever waits on a socket.

// detach takes nc's socket out of Go's netpoller as a close-on-exec
// descriptor of the same (non-blocking) open file, and closes nc.
func detach(nc *net.TCPConn) (int, error) {
	rc, err := nc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(f uintptr) {
		fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, fmt.Errorf("fabric/tcp: dup: %w", derr)
	}
	_ = nc.Close()
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return -1, fmt.Errorf("fabric/tcp: non-blocking mode: %w", err)
	}
	return fd, nil
}

// recvSome reads what the socket holds into p: n > 0, or again (nothing
// there now), or an error (io.EOF-like: n == 0 with no error is the peer's
// FIN, reported as errEOF).
func recvSome(fd int, p []byte) (n int, again bool, err error) {
	for {
		n, err = unix.Read(fd, p)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return 0, true, nil
		case err != nil:
			return 0, false, err
		case n == 0 && len(p) > 0:
			return 0, false, errEOF
		}
		return n, false, nil
	}
}

// sendSome sends what the socket takes now of p. MSG_NOSIGNAL: a dead
// peer is an error, not a SIGPIPE.
func sendSome(fd int, p []byte) (int, error) {
	sent := 0
	for sent < len(p) {
		n, err := unix.SendmsgN(fd, p[sent:], nil, nil, unix.MSG_NOSIGNAL|unix.MSG_DONTWAIT)
		if n > 0 {
			sent += n
		}
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return sent, nil
		case err != nil:
			return sent, err
		}
	}
	return sent, nil
}

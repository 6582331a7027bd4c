package shm

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/internal/fdhint"
)

func init() { fabric.Register("shm", provider{}) }

type provider struct{}

// DefaultSocketMode is the listener socket's file mode unless the URL says
// otherwise (?mode=0660): only the owner may connect.
const DefaultSocketMode os.FileMode = 0o600

func socketPath(u *url.URL) (string, error) {
	switch {
	case u.Host != "":
		return "", fmt.Errorf("shm: address %q has a host; want shm:///path/to/socket", u.String())
	case u.Opaque != "":
		return u.Opaque, nil // shm:relative/path
	case u.Path == "":
		return "", fmt.Errorf("shm: address %q has no socket path", u.String())
	}
	return u.Path, nil
}

func (provider) Listen(u *url.URL, o fabric.Options) (fabric.Listener, error) {
	path, err := socketPath(u)
	if err != nil {
		return nil, err
	}
	mode := DefaultSocketMode
	if m := u.Query().Get("mode"); m != "" {
		v, err := strconv.ParseUint(m, 8, 32)
		if err != nil || v > 0o777 {
			return nil, fmt.Errorf("shm: bad socket mode %q in %q", m, u.String())
		}
		mode = os.FileMode(v)
	}
	return listen(path, mode, o)
}

func (provider) Dial(ctx context.Context, u *url.URL, o fabric.Options) (fabric.Setup, error) {
	path, err := socketPath(u)
	if err != nil {
		return nil, err
	}
	if o.DomainSize > MaxDialerDomain {
		return nil, fmt.Errorf("shm: dial %s: domain size %d over the %d an acceptor maps", path, o.DomainSize, MaxDialerDomain)
	}
	// The domain first: the hello can then follow the connect at once,
	// and the listener, woken by the connect, finds it there. A dialer
	// that borrows its domain makes none: the accept brings it.
	var d *domain
	if !o.BorrowDomain {
		if d, err = newDomain(o.DomainSize); err != nil {
			return nil, fdhint.Explain(err)
		}
	}
	f, err := dialSock(ctx, path)
	if err != nil {
		if d != nil {
			d.close()
		}
		return nil, err
	}
	return &setup{d: d, dial: f, opts: o}, nil
}

// dialSock connects a unix SEQPACKET socket to path, outside the Go
// runtime's poller (a blocking descriptor in an *os.File): the dialer
// polls for its accept itself, and the poller would wake an idle thread
// for each of the handshake's events (the connect, the accept coming
// in) with nothing for it to do; on 2 cores such a thread takes the
// core the listener's handshake needs. A unix socket's connect fails
// with EAGAIN while the listener's backlog is full: a burst of dialers,
// not a dead listener.
func dialSock(ctx context.Context, path string) (*os.File, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("shm: dial %s: socket: %w", path, fdhint.Explain(err))
	}
	sa := &unix.SockaddrUnix{Name: path}
	for backoff := time.Millisecond; ; backoff = min(2*backoff, 50*time.Millisecond) {
		err = unix.Connect(fd, sa)
		if err == unix.EINTR {
			continue
		}
		if err != unix.EAGAIN {
			break
		}
		select {
		case <-ctx.Done():
			unix.Close(fd)
			return nil, fmt.Errorf("shm: dial %s: %w (listener backlog full)", path, ctx.Err())
		case <-time.After(backoff):
		}
	}
	if err == nil {
		err = unix.SetNonblock(fd, false)
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("shm: dial %s: connect: %w", path, fdhint.Explain(err))
	}
	return os.NewFile(uintptr(fd), path), nil
}

package shm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"syscall"
	"time"

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
	// and the listener, woken by the connect, finds it there.
	d, err := newDomain(o.DomainSize)
	if err != nil {
		return nil, fdhint.Explain(err)
	}
	var nd net.Dialer
	c, err := nd.DialContext(ctx, "unixpacket", path)
	// A unix socket's connect fails with EAGAIN while the listener's
	// backlog is full: a burst of dialers, not a dead listener.
	for backoff := time.Millisecond; errors.Is(err, syscall.EAGAIN); backoff = min(2*backoff, 50*time.Millisecond) {
		select {
		case <-ctx.Done():
			d.close()
			return nil, fmt.Errorf("shm: dial %s: %w (listener backlog full)", path, ctx.Err())
		case <-time.After(backoff):
		}
		c, err = nd.DialContext(ctx, "unixpacket", path)
	}
	if err != nil {
		d.close()
		return nil, fmt.Errorf("shm: dial %s: %w", path, fdhint.Explain(err))
	}
	return &setup{d: d, sock: c.(*net.UnixConn), opts: o}, nil
}

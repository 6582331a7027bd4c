package tcp

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"syscall"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/internal/eventbell"
)

func init() { fabric.Register("tcp", provider{}) }

type provider struct{}

func hostPort(u *url.URL) (string, error) {
	if u.Host == "" || u.Port() == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return "", fmt.Errorf("fabric/tcp: address %q: want tcp://host:port", u.String())
	}
	return u.Host, nil
}

func checkOptions(o fabric.Options) error {
	if o.QueueDepth > maxQueueDepth {
		return fmt.Errorf("fabric/tcp: QueueDepth %d exceeds %d", o.QueueDepth, maxQueueDepth)
	}
	return nil
}

func (provider) Listen(u *url.URL, o fabric.Options) (fabric.Listener, error) {
	o = o.WithDefaults()
	if err := checkOptions(o); err != nil {
		return nil, err
	}
	hp, err := hostPort(u)
	if err != nil {
		return nil, err
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("fabric/tcp: %s names no host, which would listen on every interface: use tcp://127.0.0.1:%s for this machine only, or tcp://0.0.0.0:%s to mean every interface", u, u.Port(), u.Port())
	}
	// No keepalive of Go's own on accepted sockets: they inherit the
	// fabric's from the listening socket (sockOpts).
	lc := net.ListenConfig{KeepAlive: -1, Control: func(_, _ string, rc syscall.RawConn) error {
		var terr error
		if err := rc.Control(func(fd uintptr) { terr = tuneFD(int(fd)) }); err != nil {
			return err
		}
		return terr
	}}
	ln, err := lc.Listen(context.Background(), "tcp", hp)
	if err != nil {
		return nil, fmt.Errorf("fabric/tcp: %w", err)
	}
	var bells *eventbell.Set
	if o.Doorbells > 0 {
		if o.Doorbells > fabric.MaxDoorbells {
			ln.Close()
			return nil, fmt.Errorf("fabric/tcp: %d doorbells, at most %d", o.Doorbells, fabric.MaxDoorbells)
		}
		if bells, err = eventbell.New(o.Doorbells); err != nil {
			ln.Close()
			return nil, err
		}
	}
	return newListener(ln.(*net.TCPListener), o, bells), nil
}

// Dial only connects; the hello goes out with Establish, which carries the
// dialer's private data.
func (provider) Dial(ctx context.Context, u *url.URL, o fabric.Options) (fabric.Setup, error) {
	o = o.WithDefaults()
	if err := checkOptions(o); err != nil {
		return nil, err
	}
	hp, err := hostPort(u)
	if err != nil {
		return nil, err
	}
	ds, err := dialFD(ctx, hp)
	if err != nil {
		return nil, err
	}
	return newDialSetup(ds, o), nil
}

package tcp

import (
	"context"
	"fmt"
	"net"
	"net/url"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/internal/eventbell"
	"github.com/jakiro-kv/jakiro/fabric/internal/fdhint"
	"golang.org/x/sys/unix"
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
	ln, err := net.Listen("tcp", hp)
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
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", hp)
	if err != nil {
		return nil, fmt.Errorf("fabric/tcp: %w", fdhint.Explain(err))
	}
	nc := c.(*net.TCPConn)
	if err := tune(nc); err != nil {
		_ = nc.Close()
		return nil, err
	}
	return newSetup(nc, o, true), nil
}

// tune sets what the fabric needs of a socket: no Nagle delay (a batch is
// one write already), and prompt detection of a vanished peer host.
func tune(nc *net.TCPConn) error {
	if err := nc.SetNoDelay(true); err != nil {
		return fmt.Errorf("fabric/tcp: TCP_NODELAY: %w", err)
	}
	if err := nc.SetKeepAliveConfig(net.KeepAliveConfig{
		Enable: true, Idle: KeepAliveIdle, Interval: KeepAliveInterval, Count: KeepAliveCount,
	}); err != nil {
		return fmt.Errorf("fabric/tcp: keepalive: %w", err)
	}
	rc, err := nc.SyscallConn()
	if err != nil {
		return fmt.Errorf("fabric/tcp: %w", err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(UserTimeout.Milliseconds()))
	}); err != nil {
		return fmt.Errorf("fabric/tcp: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("fabric/tcp: TCP_USER_TIMEOUT: %w", serr)
	}
	return nil
}

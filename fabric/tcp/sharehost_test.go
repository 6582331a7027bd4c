package tcp

import (
	"net"
	"syscall"
	"testing"

	"github.com/jakiro-kv/jakiro/fabric"
)

// fdOf runs f with c's descriptor.
func fdOf(t *testing.T, c syscall.Conn, f func(fd int)) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Control(func(fd uintptr) { f(int(fd)) }); err != nil {
		t.Fatal(err)
	}
}

// dialSelf connects to a listener on addr and returns the dialer's end.
func dialSelf(t *testing.T, network, addr string) (net.Conn, error) {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { ln.Close() })
	c, err := net.Dial(network, ln.Addr().String())
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	return c, nil
}

// mustDialSelf is dialSelf, failing the test on error.
func mustDialSelf(t *testing.T, network, addr string) net.Conn {
	t.Helper()
	c, err := dialSelf(t, network, addr)
	if err != nil {
		t.Fatalf("%s to %s: %v", network, addr, err)
	}
	return c
}

// A connection over loopback, or to one of this host's own addresses, has
// its peer on this host; a socket that is no IP connection has none.
func TestSameHost(t *testing.T) {
	fdOf(t, mustDialSelf(t, "tcp", "127.0.0.1:0").(*net.TCPConn), func(fd int) {
		if !sameHost(fd) {
			t.Error("a loopback connection's peer is not on this host")
		}
	})
	fdOf(t, mustDialSelf(t, "unix", t.TempDir()+"/s").(*net.UnixConn), func(fd int) {
		if sameHost(fd) {
			t.Error("a unix socket taken for a TCP peer on this host")
		}
	})
	// One of this host's own addresses, if it has one besides loopback.
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		ip, ok := a.(*net.IPNet)
		if !ok || ip.IP.IsLoopback() || ip.IP.To4() == nil {
			continue
		}
		c, err := dialSelf(t, "tcp", net.JoinHostPort(ip.IP.String(), "0"))
		if err != nil {
			// An interface's address need not take connections (a
			// network namespace's, a firewall's): try the next one.
			t.Logf("own address %v: %v", ip.IP, err)
			continue
		}
		fdOf(t, c.(*net.TCPConn), func(fd int) {
			if !sameHost(fd) {
				t.Errorf("a connection to this host's own %v: peer not on this host", ip.IP)
			}
		})
		return
	}
	t.Log("no address besides loopback that takes connections: the own-address case not tried")
}

// A dialer that dialed a loopback address knows its peer shares the host
// without asking the socket; the acceptor asks it, and hears the same.
func TestSharesHostLoopbackDial(t *testing.T) {
	ln := listen(t, fabric.Options{})
	d, a := pairOn(t, ln)
	defer d.Close()
	defer a.Close()
	if !d.(*conn).dialedLoopback || a.(*conn).dialedLoopback {
		t.Fatalf("dialedLoopback: dialer %v, acceptor %v; want true, false", d.(*conn).dialedLoopback, a.(*conn).dialedLoopback)
	}
	if !fabric.SharesHost(d) || !fabric.SharesHost(a) {
		t.Fatalf("SharesHost: dialer %v, acceptor %v; want both true", fabric.SharesHost(d), fabric.SharesHost(a))
	}
}

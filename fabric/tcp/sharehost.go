package tcp

import (
	"net/netip"

	"golang.org/x/sys/unix"
)

// SharesHost implements fabric.HostSharer: the socket's peer is a
// loopback address or this very host's (a connection to one of its own
// addresses has the same address at both ends). Looked up when asked (a
// dialer asks once; an acceptor never), not at every connection, and
// known without a system call where the dialer dialed a loopback address
// (four of them, on a join's path, otherwise).
func (c *conn) SharesHost() bool { return c.dialedLoopback || sameHost(c.fd) }

// sameHost says whether fd's peer runs on this host.
func sameHost(fd int) bool {
	peer, err := unix.Getpeername(fd)
	if err != nil {
		return false
	}
	self, err := unix.Getsockname(fd)
	if err != nil {
		return false
	}
	p, s := sockAddr(peer), sockAddr(self)
	return p.IsValid() && (p.IsLoopback() || p == s)
}

func sockAddr(sa unix.Sockaddr) netip.Addr {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrFrom4(a.Addr)
	case *unix.SockaddrInet6:
		return netip.AddrFrom16(a.Addr).Unmap()
	}
	return netip.Addr{}
}

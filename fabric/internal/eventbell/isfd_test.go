package eventbell

import (
	"testing"

	"golang.org/x/sys/unix"
)

// IsFD takes eventfds, and nothing a ring's 8-byte write could block on or
// land in: pipes, sockets, memfds. An fd of another anonymous kind (epoll)
// may pass the quick check; a write to it fails at once.
func TestIsFD(t *testing.T) {
	open := func(fd int, err error) int {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	efd := open(unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK))
	if !IsFD(efd) {
		t.Fatal("an eventfd is not taken for one")
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	open(p[0], nil)
	open(p[1], nil)
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	open(sp[0], nil)
	open(sp[1], nil)
	mfd := open(unix.MemfdCreate("isfd", unix.MFD_CLOEXEC))
	for name, fd := range map[string]int{"pipe": p[1], "socket": sp[0], "memfd": mfd} {
		if IsFD(fd) {
			t.Errorf("a %s is taken for an eventfd", name)
		}
	}
	ep := open(unix.EpollCreate1(unix.EPOLL_CLOEXEC))
	if IsFD(ep) {
		var b [8]byte
		b[0] = 1
		if _, err := unix.Write(ep, b[:]); err == nil {
			t.Fatal("an epoll fd taken for an eventfd accepted a ring's write")
		}
	}
}

// Package eventbell is the eventfd doorbells the shm and tcp providers
// (and the verbs provider's listener) build fabric.Doorbells on.
package eventbell

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Set is a set of doorbells backed by Linux eventfds, for providers to
// build on: they can ring them from any process that holds the fds. It
// implements fabric.Doorbells and fabric.RingCounter.
type Set struct {
	fds    []int
	rings  []atomic.Uint64 // per bell: the eventfd counts WaitBell read
	closed atomic.Bool     // Close may race a waiter that outlived its owner
}

// New makes n bells.
func New(n int) (*Set, error) {
	b := &Set{}
	for i := 0; i < n; i++ {
		fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("fabric: eventfd: %w", err)
		}
		b.fds = append(b.fds, fd)
	}
	b.rings = make([]atomic.Uint64, n)
	return b, nil
}

// FDs are the eventfds, to pass to peers.
func (b *Set) FDs() []int {
	if b == nil {
		return nil
	}
	return b.fds
}

// RingBell rings bell i; out-of-range bells are ignored.
func (b *Set) RingBell(i int) error { return RingFD(b.fd(i)) }

func (b *Set) fd(i int) int {
	if b == nil || i < 0 || i >= len(b.fds) || b.closed.Load() {
		return -1
	}
	return b.fds[i]
}

// RingFD adds one to an eventfd (a saturated counter is already rung).
func RingFD(fd int) error {
	if fd < 0 {
		return nil
	}
	one := [8]byte{1}
	if _, err := unix.Write(fd, one[:]); err != nil && err != unix.EAGAIN {
		return fmt.Errorf("fabric: ring doorbell: %w", err)
	}
	return nil
}

// WaitBell implements fabric.Doorbells.
func (b *Set) WaitBell(i int, d time.Duration) (bool, error) {
	fd := b.fd(i)
	if fd < 0 {
		return false, fmt.Errorf("fabric: no doorbell %d", i)
	}
	var buf [8]byte
	if n, _ := unix.Read(fd, buf[:]); n == 8 {
		b.count(i, buf)
		return true, nil // rung before we waited
	}
	if d <= 0 {
		return false, nil
	}
	ms := int(d / time.Millisecond)
	if ms < 1 {
		ms = 1
	}
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(pfd, ms)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("fabric: wait doorbell: %w", err)
		}
		if n == 0 {
			return false, nil
		}
		r, _ := unix.Read(fd, buf[:])
		if r != 8 {
			return false, nil
		}
		b.count(i, buf)
		return true, nil
	}
}

func (b *Set) count(i int, v [8]byte) { b.rings[i].Add(binary.NativeEndian.Uint64(v[:])) }

// BellRings implements fabric.RingCounter.
func (b *Set) BellRings(i int) uint64 {
	if b == nil || i < 0 || i >= len(b.rings) {
		return 0
	}
	return b.rings[i].Load()
}

// Close frees the eventfds.
func (b *Set) Close() error {
	if b == nil || b.closed.Swap(true) {
		return nil
	}
	for _, fd := range b.fds {
		unix.Close(fd)
	}
	return nil
}

// IsFD reports whether fd is an eventfd, for providers that receive
// bells from a peer and must not write to anything else.
func IsFD(fd int) bool {
	link, err := readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	return err == nil && link == "anon_inode:[eventfd]"
}

func readlink(p string) (string, error) {
	buf := make([]byte, 64)
	n, err := unix.Readlink(p, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

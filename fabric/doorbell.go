package fabric

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Doorbells are an optional capability that lets a target with no work
// block instead of polling its memory, and be woken within microseconds:
// a listener built with Options.Doorbells = n offers bells 0..n-1; any
// connection accepted by it can ring them. A target must still scan its
// memory after waking (a bell carries no data) and before waiting (a ring
// may predate the wait; rings are remembered until the next Wait returns).
//
// Providers that have them implement Doorbells on their listener and Ringer
// on dialer-side connections; callers type-assert and fall back to polling.

// Doorbells is implemented by listeners that offer bells.
type Doorbells interface {
	// WaitBell blocks until bell i has been rung since the previous
	// WaitBell(i) returned, or until d passes. It reports whether it rang.
	WaitBell(i int, d time.Duration) (bool, error)
	// RingBell rings bell i locally (to wake a waiter, e.g. at shutdown).
	RingBell(i int) error
}

// Ringer is implemented by dialer-side connections to such listeners.
type Ringer interface {
	// RingBell rings the acceptor's bell i. A bell the acceptor does not
	// offer is ignored.
	RingBell(i int) error
}

// EventBells is a set of doorbells backed by Linux eventfds, for providers
// to build on: they can ring them from any process that holds the fds.
type EventBells struct {
	fds []int
}

// NewEventBells makes n bells.
func NewEventBells(n int) (*EventBells, error) {
	b := &EventBells{}
	for i := 0; i < n; i++ {
		fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("fabric: eventfd: %w", err)
		}
		b.fds = append(b.fds, fd)
	}
	return b, nil
}

// FDs are the eventfds, to pass to peers.
func (b *EventBells) FDs() []int {
	if b == nil {
		return nil
	}
	return b.fds
}

// RingBell rings bell i; out-of-range bells are ignored.
func (b *EventBells) RingBell(i int) error { return RingEventFD(b.fd(i)) }

func (b *EventBells) fd(i int) int {
	if b == nil || i < 0 || i >= len(b.fds) {
		return -1
	}
	return b.fds[i]
}

// RingEventFD adds one to an eventfd (a saturated counter is already rung).
func RingEventFD(fd int) error {
	if fd < 0 {
		return nil
	}
	one := [8]byte{1}
	if _, err := unix.Write(fd, one[:]); err != nil && err != unix.EAGAIN {
		return fmt.Errorf("fabric: ring doorbell: %w", err)
	}
	return nil
}

// WaitBell implements Doorbells.
func (b *EventBells) WaitBell(i int, d time.Duration) (bool, error) {
	fd := b.fd(i)
	if fd < 0 {
		return false, fmt.Errorf("fabric: no doorbell %d", i)
	}
	var buf [8]byte
	if n, _ := unix.Read(fd, buf[:]); n == 8 {
		return true, nil // rung before we waited
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
		return r == 8, nil
	}
}

// Close frees the eventfds.
func (b *EventBells) Close() error {
	if b == nil {
		return nil
	}
	for _, fd := range b.fds {
		unix.Close(fd)
	}
	b.fds = nil
	return nil
}

// IsEventFD reports whether fd is an eventfd, for providers that receive
// bells from a peer and must not write to anything else.
func IsEventFD(fd int) bool {
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

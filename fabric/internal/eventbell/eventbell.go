// Package eventbell is the doorbells the shm and tcp providers (and the
// verbs provider's listener) build fabric.Doorbells on.
//
// A bell is a ring counter in shared memory, an asleep flag beside it, and
// an eventfd. A ring adds one to the counter and writes the eventfd only
// when the flag says the waiter is blocked: a ring to a partition that is
// awake costs a memory add, not a system call. The waiter raises the flag,
// then looks at the counter once more before it blocks; the ringer adds,
// then reads the flag (both sequentially consistent atomics), so one of
// the two always sees the other and no ring is lost.
//
// Peers in other processes (shm) map the counters read-write and the flags
// read-only: a peer can ring as often as it likes (spurious rings cost the
// waiter a look, as eventfd writes would) but cannot hide a blocked waiter
// from the others.
package eventbell

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Set is a set of doorbells for providers to build on; processes that hold
// its shared fds (Share) ring them with Remote. It implements
// fabric.Doorbells and fabric.RingCounter.
type Set struct {
	fds    []int
	park   []*parking // per bell: its long waits, parked (park.go); nil: none
	pages  pages
	roFlag int             // read-only fd of the flag page, for peers
	seen   []uint64        // per bell: the counter WaitBell last saw (only WaitBell(i) touches seen[i])
	rings  []atomic.Uint64 // per bell: rings WaitBell saw
	closed atomic.Bool     // Close may race a waiter that outlived its owner

	srcMu   sync.Mutex
	freeSrc []int // names returned, reused first: the bitmap stays as small as the peers
	nextSrc int
}

// maxRingsSeen bounds the rings one look counts: peers write the
// counters, and a counter moved by a wild value must not count as 2^64
// rings.
const maxRingsSeen = 1 << 16

// New makes n bells.
func New(n int) (*Set, error) {
	b := &Set{roFlag: -1}
	for i := 0; i < n; i++ {
		fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("fabric: eventfd: %w", err)
		}
		b.fds = append(b.fds, fd)
		b.park = append(b.park, newParking(fd)) // nil where it cannot be
	}
	p, ro, err := newPages(n)
	if err != nil {
		b.Close()
		return nil, err
	}
	b.pages, b.roFlag = p, ro
	b.seen = make([]uint64, n)
	b.rings = make([]atomic.Uint64, n)
	return b, nil
}

// Share is what a peer in another process needs to ring the bells (see
// Open): the counter page (read-write), the flag page (read-only) and the
// eventfds, in that order; nil without bells.
func (b *Set) Share() []int {
	if b == nil || len(b.fds) == 0 {
		return nil
	}
	return append([]int{b.pages.counterFD, b.roFlag}, b.fds...)
}

// RingBell rings bell i; out-of-range bells are ignored.
func (b *Set) RingBell(i int) error {
	if b == nil || i < 0 || i >= len(b.fds) || b.closed.Load() {
		return nil
	}
	return ring(&b.pages, b.fds, i, -1)
}

// RingFrom rings bell i naming src, for providers that receive rings on a
// connection (tcp) and ring locally for it.
func (b *Set) RingFrom(i, src int) error {
	if b == nil || i < 0 || i >= len(b.fds) || b.closed.Load() {
		return nil
	}
	return ring(&b.pages, b.fds, i, src)
}

// TakeRingers implements fabric.RingSources: the sources named on bell i
// since the last call, appended to dst. One goroutine takes a bell's.
func (b *Set) TakeRingers(i int, dst []int) []int {
	if b == nil || i < 0 || i >= len(b.fds) || b.closed.Load() {
		return dst
	}
	return b.pages.take(i, dst)
}

// AllocSource gives a connection a name to ring under (-1 when all
// MaxSources are taken); FreeSource returns it.
func (b *Set) AllocSource() int {
	if b == nil {
		return -1
	}
	b.srcMu.Lock()
	defer b.srcMu.Unlock()
	if n := len(b.freeSrc); n > 0 {
		s := b.freeSrc[n-1]
		b.freeSrc = b.freeSrc[:n-1]
		return s
	}
	if b.nextSrc >= MaxSources {
		return -1
	}
	b.nextSrc++
	return b.nextSrc - 1
}

// FreeSource returns a name AllocSource gave.
func (b *Set) FreeSource(src int) {
	if b == nil || src < 0 || src >= MaxSources {
		return
	}
	b.srcMu.Lock()
	b.freeSrc = append(b.freeSrc, src)
	b.srcMu.Unlock()
}

// ring names src (if any) as a ringer of bell i, adds one to its counter
// and wakes its waiter if it is blocked.
func ring(p *pages, fds []int, i, src int) error {
	p.name(i, src)
	p.counter(i).Add(1)
	if p.flag(i).Load() == 0 {
		return nil
	}
	return RingFD(fds[i])
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

// WaitBell implements fabric.Doorbells. One goroutine waits on a bell.
func (b *Set) WaitBell(i int, d time.Duration) (bool, error) {
	if b == nil || i < 0 || i >= len(b.fds) || b.closed.Load() {
		return false, fmt.Errorf("fabric: no doorbell %d", i)
	}
	if b.look(i) {
		return true, nil // rung before we waited
	}
	if d <= 0 {
		return false, nil
	}
	flag := b.pages.flag(i)
	flag.Store(1)
	defer flag.Store(0)
	if b.look(i) { // rung as we raised the flag: its ringer may not have seen it
		return true, nil
	}
	if pk := b.park[i]; pk != nil && d >= parkFrom && runtime.GOMAXPROCS(0) > 1 {
		return pk.wait(b, i, d)
	}
	return b.ppoll(i, d)
}

// ppoll waits on bell i's eventfd: ppoll, not poll, for its timeout in
// nanoseconds (a partition on a host with no free core dozes on its bell
// for microseconds; poll's timeout is in milliseconds).
func (b *Set) ppoll(i int, d time.Duration) (bool, error) {
	deadline := time.Now().Add(d)
	ts := unix.NsecToTimespec(int64(d))
	pfd := []unix.PollFd{{Fd: int32(b.fds[i]), Events: unix.POLLIN}}
	for {
		_, err := unix.Ppoll(pfd, &ts, nil)
		if err == unix.EINTR {
			continue // ppoll left the time remaining in ts
		}
		if err != nil {
			return false, fmt.Errorf("fabric: wait doorbell: %w", err)
		}
		var buf [8]byte
		unix.Read(b.fds[i], buf[:]) // drain; the counter counts
		if b.look(i) {
			return true, nil
		}
		// A write left by a ring already counted (it saw the flag of an
		// earlier wait) wakes us for nothing: wait out the rest.
		left := time.Until(deadline)
		if left <= 0 {
			return false, nil
		}
		ts = unix.NsecToTimespec(int64(left))
	}
}

// look reports whether bell i's counter moved since the last look, and
// counts the rings.
func (b *Set) look(i int) bool {
	c := b.pages.counter(i).Load()
	if c == b.seen[i] {
		return false
	}
	b.rings[i].Add(min(c-b.seen[i], maxRingsSeen))
	b.seen[i] = c
	return true
}

// BellRings implements fabric.RingCounter.
func (b *Set) BellRings(i int) uint64 {
	if b == nil || i < 0 || i >= len(b.rings) {
		return 0
	}
	return b.rings[i].Load()
}

// Close frees the eventfds and pages. Rings and waits after Close are
// ignored or fail; the pages stay mapped (a waiter may outlive Close).
func (b *Set) Close() error {
	if b == nil || b.closed.Swap(true) {
		return nil
	}
	for _, pk := range b.park {
		pk.close() // wakes a parked waiter, which then leaves the fds alone
	}
	for _, fd := range b.fds {
		unix.Close(fd)
	}
	b.pages.closeFDs()
	if b.roFlag >= 0 {
		unix.Close(b.roFlag)
	}
	return nil
}

// IsFD reports whether fd is an eventfd, for providers that receive
// bells from a peer and must not write to anything else. An fd on the
// anonymous inode this process's own eventfds have is taken at once (an
// fstat): the kernel keeps one such inode for eventfds and other kinds
// (epoll, signalfd, timerfd), and the others fail a write at once
// (EINVAL) rather than block, so nothing a ring writes can hang on one;
// pipes, sockets, files and devices have inodes of their own. Any other
// fd is asked for its kind in /proc (a readlink, ~4 µs on a small VM:
// a third of what opening a peer's bells cost a join).
func IsFD(fd int) bool {
	var st unix.Stat_t
	if ino, ok := eventfdInode(); ok && unix.Fstat(fd, &st) == nil && st.Dev == ino.Dev && st.Ino == ino.Ino {
		return true
	}
	link, err := readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	return err == nil && link == "anon_inode:[eventfd]"
}

// eventfdInode is the device and inode of an eventfd of this process's
// own, found once.
var eventfdInode = sync.OnceValues(func() (unix.Stat_t, bool) {
	var st unix.Stat_t
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return st, false
	}
	defer unix.Close(fd)
	return st, unix.Fstat(fd, &st) == nil
})

func readlink(p string) (string, error) {
	buf := make([]byte, 64)
	n, err := unix.Readlink(p, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

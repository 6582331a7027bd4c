package memcache

import (
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A connection that answered a round polls its socket for a while
// (Config.Spin) before it waits in Go's netpoller. A wait there ends in
// the kernel waking the thread, which on a virtual machine whose vCPU
// halted costs tens of microseconds per request (the door at one
// partition under go-ycsb: p50 53 µs against 12 µs spinning, on 2
// cores). A request that arrives within the spin is read at once. A
// spinner yields to the door's other goroutines (runtime.Gosched), not to
// the OS: a sched_yield past 10 or 20 µs of spinning cost a third of the
// gain, or all of it.
//
// While a goroutine spins, the runtime does not poll the network: it does
// only when nothing is runnable (or from its monitor, every 10 ms). So
// connections waiting in the netpoller, and accepts, would wait that
// long. Spinning therefore comes in epochs of spinBreath: when one ends,
// every spinner stops and waits in the netpoller, which then polls, and a
// connection spins again only after the netpoller woke it in a later
// epoch. A connection not spinning waits at most about one epoch more
// than it would with no spinner. At most spinMax connections spin at
// once, and none while the backend's partitions poll for RFP clients
// (Backend's Polling, where it has one): their cores are taken. A spinner
// also looks at an epoll set of all the door's sockets every few
// microseconds, and ends the epoch early when one that no spinner reads
// has bytes (or the listener a connection): a connection sleeping beside
// spinners waits a few microseconds more, not an epoch.
const (
	DefaultSpin = 30 * time.Microsecond
	spinBreath  = 100 * time.Microsecond
	spinMax     = 16
)

// spinner is the door's view of its spinning connections.
type spinner struct {
	dur      int64         // ns; 0: no spinning
	epoch    atomic.Uint64 // advanced every spinBreath
	epochEnd atomic.Int64  // monotonic ns
	polling  func() bool   // the partitions poll (RFP clients); nil: never
	// slots hold the sockets spinning now, fd+1 each (0: a free slot).
	slots [spinMax]atomic.Int32
	// watch is an edge-triggered epoll set of every connection's socket
	// and the listener's (-1: none), so that a spinner sees bytes for a
	// connection that sleeps in the netpoller, or a new connection, and
	// ends the epoch at once rather than at its time (sleeperReady).
	watchMu sync.RWMutex
	watch   int
	watchAt atomic.Int64 // monotonic ns: a spinner last looked at it
}

// watchEvery: how often spinners look at the watch set, one of them.
const watchEvery = int64(2 * time.Microsecond)

var monoBase = time.Now()

// mono is a monotonic clock in ns.
func mono() int64 { return int64(time.Since(monoBase)) }

// openWatch makes the watch set, with the listener's socket in it.
func (s *spinner) openWatch(ln net.Listener) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return // spinners then end their epochs at their time only
	}
	s.watchMu.Lock()
	s.watch = fd
	s.watchMu.Unlock()
	if sc, ok := ln.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			s.add(rc)
		}
	}
}

// add puts a socket in the watch set; closing the socket takes it out.
func (s *spinner) add(rc syscall.RawConn) {
	s.watchMu.RLock()
	defer s.watchMu.RUnlock()
	if s.watch < 0 {
		return
	}
	rc.Control(func(fd uintptr) {
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(fd)}
		unix.EpollCtl(s.watch, unix.EPOLL_CTL_ADD, int(fd), &ev) // none: this socket ends epochs at their time
	})
}

// closeWatch closes the watch set, once no connection runs.
func (s *spinner) closeWatch() {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.watch >= 0 {
		unix.Close(s.watch)
		s.watch = -1
	}
}

// sleeperReady looks at the watch set (one spinner every watchEvery):
// true if a socket no spinner reads has something, a request or a
// connection, which the netpoller should be let to see.
func (s *spinner) sleeperReady(now int64) bool {
	at := s.watchAt.Load()
	if now-at < watchEvery || !s.watchAt.CompareAndSwap(at, now) || !s.watchMu.TryRLock() {
		return false
	}
	defer s.watchMu.RUnlock()
	if s.watch < 0 {
		return false
	}
	var evs [16]unix.EpollEvent
	n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(s.watch), uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), 0, 0, 0)
	if e != 0 {
		return false
	}
	for _, ev := range evs[:n] {
		if !s.spinning(ev.Fd) {
			return true
		}
	}
	return false
}

// claim takes a slot for socket fd: -1 if spinMax spin already.
func (s *spinner) claim(fd uintptr) int {
	for i := range s.slots {
		if s.slots[i].Load() == 0 && s.slots[i].CompareAndSwap(0, int32(fd)+1) {
			return i
		}
	}
	return -1
}

func (s *spinner) spinning(fd int32) bool {
	for i := range s.slots {
		if s.slots[i].Load() == fd+1 {
			return true
		}
	}
	return false
}

// endEpoch ends the epoch now.
func (s *spinner) endEpoch(now int64) {
	s.epochEnd.Store(now + int64(spinBreath))
	s.epoch.Add(1)
}

// over says whether epoch e has ended, ending the current one if its
// time is up.
func (s *spinner) over(e uint64, now int64) bool {
	if end := s.epochEnd.Load(); now >= end && s.epochEnd.CompareAndSwap(end, now+int64(spinBreath)) {
		s.epoch.Add(1)
	}
	return s.epoch.Load() != e
}

// spin polls the socket until bytes come (got), the spin time or the
// epoch ends (neither: wait in the netpoller), or the read fails (stop,
// c.pumpErr set). It runs inside the pump (the RawConn.Read callback).
func (c *conn) spin() (got, stop bool) {
	s := &c.d.spin
	if s.dur == 0 || c.spinEpoch != s.epoch.Load() || (s.polling != nil && s.polling()) {
		return false, false
	}
	slot := s.claim(c.fd)
	if slot < 0 {
		return false, false
	}
	defer s.slots[slot].Store(0)
	start := mono()
	for {
		runtime.Gosched()
		now := mono()
		if now-start > s.dur || s.over(c.spinEpoch, now) {
			return false, false
		}
		if s.sleeperReady(now) {
			s.endEpoch(now)
			return false, false
		}
		c.drained = false
		if _, err := c.r.Peek(1); err == nil {
			return true, false
		} else if err != errWouldBlock {
			c.pumpErr = err
			return false, true
		}
	}
}

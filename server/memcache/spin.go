package memcache

import (
	"runtime"
	"sync/atomic"
	"time"
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
// (Backend's Polling, where it has one): their cores are taken.
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
	n        atomic.Int32  // connections spinning now
	polling  func() bool   // the partitions poll (RFP clients); nil: never
}

var monoBase = time.Now()

// mono is a monotonic clock in ns.
func mono() int64 { return int64(time.Since(monoBase)) }

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
	if s.n.Add(1) > spinMax {
		s.n.Add(-1)
		return false, false
	}
	defer s.n.Add(-1)
	start := mono()
	for {
		runtime.Gosched()
		if now := mono(); now-start > s.dur || s.over(c.spinEpoch, now) {
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

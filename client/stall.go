package client

import (
	"time"

	"golang.org/x/sys/unix"
)

// stallNS: how long a driver sees no answer come in before it gives its
// core away (sched_yield), where the server shares this host (shm).
//
// There, answers stall when the partition's thread lost its core, most
// often to this very process: on 2 cores, go-ycsb at GOMAXPROCS 2 runs
// its callers on a second thread beside the driver's, three threads for
// two cores with the partition's. Spinning on only keeps the partition
// off longer. Measured on 2 cores (compare at defaults, go-ycsb 95/5,
// 3 s points, interleaved): 64 threads 608-640 k -> 771-801 k ops/s, 4
// threads 627-652 k -> 683-718 k; 3, 5, 10 and 20 us all within that
// spread, GOMAXPROCS 1 unchanged (853-867 k). Not over tcp, where an
// answer takes ~10 us anyway and yielding that often made one-at-a-time
// latency 12-17% slower (osYieldColdNS).
const stallNS = 10_000

// A stall that lasts is the server starved of CPU, not a core briefly
// lost: past stallNapNS without an answer the driver sleeps instead of
// yielding, a quarter of the stall so far each time (stallNapMin to
// stallNapMax), so an answer that comes meanwhile is seen at most 25%
// later than it came. Only where the server runs on this host (shm, or
// tcp to a local address: fabric.SharesHost): a remote server's answer
// may take milliseconds for the network's sake. Spinning on was harmful
// there: every process waiting so stays runnable and takes its turns on
// the cores the server needs to answer it. A burst of 256 short-lived
// clients whose server runs in a session (autogroup) of its own spun so
// (on shm yielding every stallNS, on tcp in its polls), and the host's
// scheduler starved every other process, the server and a bystander
// alike, for up to 30 s (kernel 6.18, 2 cores: 0.6 M context switches a
// second).
const (
	stallNapNS  = 1_000_000
	stallNapMin = 50_000
	stallNapMax = 2_000_000
)

// stallWatch tells a driver when its group's answers have stalled: no
// caller woken and none of the driver's own calls done for stallNS, then
// again every stallNS while that lasts. The driver asks at its yields
// (every goschedNS at least), with the callers woken since the last.
// Pure: the driver brings the clock.
type stallWatch struct {
	left  int32 // the driver's calls not done, at the last progress
	at    int64 // when the stall is due; 0 before the first pass
	since int64 // the last progress
}

// due takes the clock, the callers woken since the last call and the
// driver's calls left, and says whether the stall is due now.
func (s *stallWatch) due(now int64, woke int, left int32) bool {
	if woke > 0 || left != s.left || s.at == 0 {
		s.left, s.at, s.since = left, now+stallNS, now
		return false
	}
	if now < s.at {
		return false
	}
	s.at = now + stallNS
	return true
}

// nap is how long a driver whose stall is due should sleep rather than
// yield: 0 until the stall lasted stallNapNS.
func (s *stallWatch) nap(now int64) int64 {
	d := now - s.since
	if d < stallNapNS {
		return 0
	}
	return min(max(d/4, stallNapMin), stallNapMax)
}

// giveWay gives g's driver's core away in a stall: past stallNapNS a nap
// where the server runs on this host (onHost), else a yield where it
// shares this host's memory (local: shm; stallNS). Out of line: inlined
// into the driver's loop it cost one-at-a-time shm latency 9%.
//
//go:noinline
func (s *stallWatch) giveWay(now int64, g *pollGroup) {
	if d := s.nap(now); d > 0 && g.onHost() {
		time.Sleep(time.Duration(d))
		return
	}
	if g.local() {
		unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
}

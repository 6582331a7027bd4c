package client

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A pollGroup is a set of connections polled by one driver at a time,
// like eRPC's one event loop per thread: the driver posts every queued
// request of every connection in the set, polls their completions and
// wakes exactly the callers whose answers came in; the other callers
// park. The driver is no goroutine of its own but whichever waiting
// caller holds the role (leader/followers): the first caller to find the
// group undriven drives it until its own answers are in, then hands the
// role to a caller still waiting, or lets it go when nothing is in
// flight. So a group spins only while it has requests out, and a
// process spins on at most as many cores as it has groups.
//
// Connections are spread over the groups when dialled; a Client's
// connections (lanes) fall in different groups. Nothing on the
// operation path is shared by the whole process: a caller touches its
// connection's inbox and reads its group's driver flag (and joins the
// busy set, when its connection was idle).
type pollGroup struct {
	driving atomic.Bool // a waiter holds the driver role
	num     uint32      // the group's index: hands name it (waiter.hand)
	// handed is the waiter the role was last handed to while the group
	// had few callers (stealCallers), which a caller may take it back
	// from (steal); callers counts those in await.
	handed  atomic.Pointer[waiter]
	callers atomic.Int32

	mu       sync.Mutex
	incoming []*conn      // connections that became busy since the driver last looked
	nIn      atomic.Int32 // len(incoming), read without mu

	// The driver's: busy connections, and how often drivers gave the
	// core away (each connection tells its engine at its next step).
	active []*conn
	yields uint32
	// When the driver next looks for parked callers whose context
	// ended: in the rings, and in the queues (which may hold thousands).
	// The group's, not a drive's: the role passes from caller to caller
	// every few microseconds.
	endedAt, queuedEndedAt int64
	_                      [64]byte
}

// groups are the process's poll groups: $JAKIRO_POLL_GROUPS, else half
// the machine's cores (those the process may run on), at most one per P,
// at least one: the other half is left to the callers' own work, and on
// a shared host to the server. Half the Ps, as before, is the same where
// the Ps are the cores; a process given fewer Ps than cores drove 64
// callers at 0.68x of 8 single-P processes with half its Ps (4 of 8, on
// 16 cores against 8 partitions) and at 0.88-0.96x with 8.
var (
	groupsOnce sync.Once
	groups     []pollGroup
	nextGroup  atomic.Uint32 // spreads connections over groups, at dial
)

func pollGroups() []pollGroup {
	groupsOnce.Do(func() {
		n := max(1, min(runtime.GOMAXPROCS(0), runtime.NumCPU()/2))
		if v, err := strconv.Atoi(os.Getenv("JAKIRO_POLL_GROUPS")); err == nil && v > 0 {
			n = v
		}
		groups = make([]pollGroup, n)
		for i := range groups {
			groups[i].num = uint32(i)
		}
	})
	return groups
}

// groupFor picks the group of a new connection; lane k of a Client goes
// k groups after its first, so a Client's lanes are driven apart.
func groupFor(base uint32, lane int) *pollGroup {
	gs := pollGroups()
	return &gs[(int(base)+lane)%len(gs)]
}

// announce makes cn's new calls visible to the group's driver: a
// connection that was idle joins the group's busy set.
func (g *pollGroup) announce(cn *conn) {
	if cn.listed.Load() || !cn.listed.CompareAndSwap(false, true) {
		return
	}
	g.mu.Lock()
	g.incoming = append(g.incoming, cn)
	g.nIn.Store(int32(len(g.incoming)))
	g.mu.Unlock()
}

// How often the driver gives its core away while it waits, in time (a
// pass over connections with nothing due takes tens of nanoseconds, so
// counting passes would yield far more often when idle than when busy):
const (
	// gosched: to the process's other goroutines (and to the callers it
	// woke, if they did not need to run sooner), at any GOMAXPROCS. The
	// callers the driver wakes wait in its P's run queue; left there for
	// microseconds, an idle P's thread is woken to steal them, and on a
	// host whose other cores the server spins on, that thread takes a
	// core from the server or the driver. Measured on 2 cores, 64
	// callers sharing a Client: 500 ns gave 1.2-1.6 Mops at GOMAXPROCS 1
	// and 2, 2 us 1.25-1.45 and 5 us or more 0.3-0.45 at GOMAXPROCS 2.
	// Also when the driver woke nobody, though such a Gosched mostly
	// wakes an idle P's thread to find nothing and parks the driver's
	// meanwhile: yielding then only every 20 us cost 4 callers 1.4-1.65x
	// the CPU per GET and a lone window-8 batch 0.81-0.92x its GETs per
	// second (in turns in one process, 2 vCPUs: BenchmarkCallerCPU's way).
	goschedNS = 500
	// ctx: look at the driver's context, and at those of the callers
	// whose calls are in the rings (endedNS) or queued (queuedEndedNS):
	// a parked caller waits for a token alone (waiter.park). A queue may
	// hold a thousand calls: looked at every 0.5 ms they cost 1,024
	// go-ycsb threads 2% of the client's CPU.
	ctxNS         = 20_000
	endedNS       = 20_000
	queuedEndedNS = 2_000_000
	// osYield: sched_yield to other processes (the server may be one of
	// them on a busy machine; Gosched yields only to goroutines).
	osYieldNS = 200_000
	// osYieldColdNS: while a connection whose NIC is a thread (tcp, here
	// and in the server) has had no answer yet. Its first answer comes
	// through threads just woken; a driver spinning 200 µs between
	// yields kept them from the core. On 2 cores, a loop of tcp joins:
	// the first GET's p99 1174-1240 -> 387-407 µs. Not for every tcp
	// request: one at a time, it made the mean latency 12-17% slower.
	osYieldColdNS = 10_000
	// yielded: a Gosched that kept the driver away this long gave its
	// core to others.
	yieldedNS = 1_000
	// gather: at most how long the driver holds a connection's new
	// calls while callers it woke there have not all called again, where
	// a post is a system call (tcp: conn.gather). Callers answered
	// together (a reply of one server pass) mostly call again within
	// microseconds; each post on loopback tcp costs ~15 us of CPU (its
	// send runs the receiver's TCP input too). Their calls in one post instead of one each measured
	// 0.74 -> 0.42 fabric operations per operation and +14% throughput
	// (go-ycsb, 4 threads, 2 cores, medians of 5 interleaved pairs).
	// Bounded, so callers that went away cost the others at most this.
	gatherNS = 20_000
)

// take makes the caller the group's driver if nobody is.
func (g *pollGroup) take() bool {
	return !g.driving.Load() && g.driving.CompareAndSwap(false, true)
}

// stealCallers: with at most this many callers in await, a caller that
// finds the role handed to a waiter not running yet takes it (steal)
// rather than park. The waiter handed it is woken through the run queue,
// and until it runs nobody drives: on 2 cores, go-ycsb at 8 and 64
// threads on one Client handed the role on 0.85 of its calls, and with
// steal on 0.02, at +16-21% ops/s and p99 2 ms -> 0.17 ms at 64 threads.
// With more callers, most of them wait in the run queue rather than in
// the rings, and the hand's wait keeps a hot few goroutines running
// while the rest wait (p50 1.8 µs, p99 4-6 ms): stealing made every
// caller's turn come round in order, cold in the caches, -9 to -13%
// ops/s at 256 and 1,024 threads.
const stealCallers = 128

// lingerNS: with more callers than stealCallers, how long a driver whose
// own answers are in drives on before it hands the role over: each hand
// wakes a parked caller, which waits its turn in a long run queue. On 2
// cores, go-ycsb on one Client, interleaved pairs: 256 threads 0.82 ->
// 0.87 M ops/s and p99 3.8 -> 1.0 ms, 1,024 threads 0.59 -> 0.60-0.62 M
// and p99 5.6-5.9 -> 4.1-4.4 ms (5 to 40 µs measured alike within the
// noise; 0.5 and 2 ms worse: the lingering driver's yields wait in that
// queue too).
const lingerNS = 40_000

// steal takes the role back from the waiter it was handed to, if that
// one has not taken it yet and the group has few callers.
func (g *pollGroup) steal(w *waiter) bool {
	h := g.handed.Load()
	return h != nil && h != w && h.unhand(g.num)
}

// list puts cn in the busy set of the group whose role the caller holds,
// without the incoming queue (direct).
func (g *pollGroup) list(cn *conn) {
	if !cn.listed.Load() && cn.listed.CompareAndSwap(false, true) {
		g.active = append(g.active, cn)
	}
}

// awaitHeld is await for a caller that holds the role already (take).
func (g *pollGroup) awaitHeld(ctx context.Context, w *waiter) error {
	var err error
	if w.pending.Load() > 0 {
		err = g.drive(ctx, w)
	}
	g.release(w)
	if err == nil && w.pending.Load() == 0 {
		// Done, having held the role throughout: no driver could hand
		// it the role (its calls were never another's to hand from), so
		// it leaves without awaitFrom's bookkeeping (atomics on the
		// one-at-a-time path).
		return nil
	}
	return g.awaitFrom(ctx, w, err)
}

// await returns once every call of w is done, driving the group while it
// holds the role, or with ctx's error.
// The caller abandons its unfinished calls after an error.
func (g *pollGroup) await(ctx context.Context, w *waiter) error {
	return g.awaitFrom(ctx, w, nil)
}

func (g *pollGroup) awaitFrom(ctx context.Context, w *waiter, err error) error {
	g.callers.Add(1)
	defer g.callers.Add(-1)
	for w.pending.Load() > 0 && err == nil {
		if w.handed() || g.take() || g.steal(w) {
			err = g.drive(ctx, w)
			g.release(w)
		} else {
			err = w.park(ctx)
		}
	}
	if w.leave() { // handed the role on the way out: pass it on
		g.release(w)
	}
	return err
}

// drive runs the group, holding the role, until w's calls are done or
// ctx ends.
func (g *pollGroup) drive(ctx context.Context, w *waiter) error {
	var unyielded int
	var gosched, ctxAt, osYield int64
	var stall stallWatch
	var until int64
	for {
		woke, rang, hungry, cold, now := g.pass(w)
		yieldNS := int64(osYieldNS)
		if cold {
			yieldNS = osYieldColdNS
		}
		left := w.pending.Load()
		if left == 0 {
			// With many callers the role stays a while past the driver's
			// own answers (lingerNS), so it changes hands less often.
			if g.callers.Load() <= stealCallers {
				return nil
			}
			if until == 0 {
				until = now + lingerNS
			} else if now >= until {
				return nil
			}
		}
		if gosched == 0 {
			gosched, ctxAt, osYield = now+goschedNS, now+ctxNS, now+yieldNS
		}
		if rang {
			// The partition we woke may wait for this very core (the
			// kernel often runs a woken thread where its waker runs).
			unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		}
		unyielded += woke
		// Callers woken run their next requests once the driver yields:
		// at once where a ring has room with nothing queued for it, else
		// within the yield interval, so several wake-ups share one yield.
		if unyielded > 0 && hungry || now >= gosched {
			// Looked at here, not every pass: a pass of a lone
			// caller's wait is tens of nanoseconds.
			if stall.due(now, unyielded, left) {
				stall.giveWay(now, g)
			}
			unyielded = 0
			gosched = now + goschedNS
			runtime.Gosched()
			if clock()-now > yieldedNS {
				// Others ran meanwhile: a retry's lateness after a miss
				// is ours, not the server's (engines learn at their next
				// step). A Gosched with nobody to run is no yield.
				g.yields++
			}
		}
		if now >= osYield {
			osYield = now + yieldNS
			unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		}
		if now >= ctxAt {
			ctxAt = now + ctxNS
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if now >= g.endedAt {
			g.wakeEnded(w, now)
		}
	}
}

// pass is one step of every busy connection: queued requests into the
// rings, posts, completions, answers to their callers (woken, but w, the
// driver). It reports how many callers it woke, whether it rang a blocked
// partition, whether a connection has room and nothing queued for it,
// whether one is cold, and the clock it read.
func (g *pollGroup) pass(w *waiter) (woke int, rang, hungry, cold bool, now int64) {
	g.takeIncoming()
	now = clock()
	for i := 0; i < len(g.active); {
		cn := g.active[i]
		n, bell, idle, room := cn.step(w, now)
		cold = cold || cn.gather && cn.cold.Load() // shm conns are never cold: no load
		woke += n
		rang = rang || bell
		hungry = hungry || room && n > 0
		if idle && cn.retire() {
			g.active[i] = g.active[len(g.active)-1]
			g.active[len(g.active)-1] = nil
			g.active = g.active[:len(g.active)-1]
			continue
		}
		i++
	}
	return woke, rang, hungry, cold, now
}

// local says whether a busy connection's server shares this host's
// memory (its READs are copies: shm).
func (g *pollGroup) local() bool {
	for _, cn := range g.active {
		if cn.copyReads {
			return true
		}
	}
	return false
}

// onHost says whether a busy connection's server runs on this host
// (shm, or tcp to a local address): a long stall there naps (stall.go).
func (g *pollGroup) onHost() bool {
	for _, cn := range g.active {
		if cn.onHost {
			return true
		}
	}
	return false
}

// wakeEnded wakes the parked callers whose context ended, so that they
// abandon their calls. The driver's.
func (g *pollGroup) wakeEnded(w *waiter, now int64) {
	queues := now >= g.queuedEndedAt
	g.endedAt = now + endedNS
	if queues {
		g.queuedEndedAt = now + queuedEndedNS
	}
	for _, cn := range g.active {
		cn.wakeEnded(w, queues)
	}
}

// releaseAlone lets go of the role held by a caller that ran its call
// alone (conn.alone): nobody else had a call in the group then, so
// company that came since announced itself (nIn), and is served as
// release would.
func (g *pollGroup) releaseAlone() {
	g.driving.Store(false)
	if g.nIn.Load() != 0 && g.take() {
		w := getWaiter()
		w.begin(0)
		g.release(w)
		putWaiter(w)
	}
}

// release passes on the role w holds.
func (g *pollGroup) release(w *waiter) {
	for !g.handOff(w) {
		// Work came in as the role was let go: one pass puts it in
		// flight, so its caller can take the role.
		g.pass(w)
	}
}

func (g *pollGroup) takeIncoming() {
	if g.nIn.Load() == 0 {
		return
	}
	g.mu.Lock()
	g.active = append(g.active, g.incoming...)
	clear(g.incoming)
	g.incoming = g.incoming[:0]
	g.nIn.Store(0)
	g.mu.Unlock()
}

// handOff gives the driver role (held by w) to a waiter with calls in
// flight, or lets it go when there is none. False: work arrived as the
// role was let go, and the caller holds the role again.
func (g *pollGroup) handOff(w *waiter) bool {
	for _, cn := range g.active {
		if h := cn.handTo(w); h != nil {
			if g.callers.Load() <= stealCallers {
				g.handed.Store(h)
			} else if g.handed.Load() != nil {
				g.handed.Store(nil)
			}
			return true
		}
	}
	// Past letting go, a new driver may hold the busy set: look at the
	// inboxes of a copy of it.
	w.seen = append(w.seen[:0], g.active...)
	g.driving.Store(false)
	// A caller that queued work while we held the role parked: take the
	// role back if its work is there and nobody else took it. (Its
	// connection is in the busy set we copied, or joined since.)
	more := g.nIn.Load() > 0
	for _, cn := range w.seen {
		more = more || cn.inboxLen.Load() > 0
	}
	clear(w.seen)
	return !more || !g.driving.CompareAndSwap(false, true)
}

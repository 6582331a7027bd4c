package tcp

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/internal/eventbell"
	"golang.org/x/sys/unix"
)

// conn is an established connection: an initiator (Post, Poll, and the
// completion half of rx) and a NIC (the request half of rx, answering
// through tx) sharing one non-blocking socket. Nothing in it blocks on the
// socket: rx reads what is there (from the poller, or from Poll while the
// connection is busy), tx sends what the socket takes and leaves the rest
// staged for the poller's next "writable" event.
type conn struct {
	fd       int
	token    uint64 // the poller's name for it
	p        *poller
	d        *domain
	bells    *eventbell.Set // acceptor side: rung by the peer's frameRing
	source   int            // acceptor side: the name its rings carry (bells.AllocSource)
	peerData []byte
	depth    int
	// dialedLoopback: the dialer connected to a loopback address (so the
	// peer shares this host without asking the socket: SharesHost).
	dialedLoopback bool
	// peerDepth is the most requests the peer may have unanswered (its
	// declared queue depth): a peer past it is not read until the
	// responses it has not taken drain.
	peerDepth int

	// Initiator ring. Post fills and publishes [tail..), rx completes
	// [resp..tail), Poll drains [head..resp).
	ops  []pending
	mask uint64
	tail atomic.Uint64
	resp atomic.Uint64
	head atomic.Uint64

	rxMu     sync.Mutex // one reader of the socket at a time
	rxWant   atomic.Bool
	rx       rxState      // under rxMu
	rxStop   bool         // under rxMu: Close stopped reading
	stopping atomic.Bool  // Close wants rx to stop at the next frame
	lastRx   atomic.Int64 // nanotime of the last bytes read
	rxPause  atomic.Bool  // tx is over outHigh: rx waits for room
	rxBuf    atomic.Pointer[[]byte]
	rxLeft   []byte // under rxMu: bytes read and not decoded (a pause, a hold)
	// A pumped read holds a READ that follows a WRITE it applied (rx.go):
	// rxPumping says the read is Pump's, rxWrote that it applied a
	// WRITE, held that rxLeft starts with such a READ.
	rxPumping bool // under rxMu
	rxWrote   bool // under rxMu
	held      atomic.Bool
	idle      uint32       // Poll's empty polls in a row
	drivenAt  atomic.Int64 // nanotime of a driver's last read (drive.go)
	armMu     sync.Mutex   // orders changes of the poller registration
	quiet     atomic.Bool  // changed under armMu: input events off, a driver reads
	outOn     atomic.Bool  // changed under armMu: "room to send" events on (poll.go)
	ackDue    atomic.Int64 // staged acks wait for this nanotime, no timer (ack.go)

	txMu   sync.Mutex  // the socket's write side
	tx     txState     // under txMu
	corked atomic.Bool // the initiator's: Post and RingBell only stage (fabric.Corker)

	sendTimeout time.Duration
	born        int64         // nanotime of the handshake's end
	vanished    func(float64) // acceptor: told when the peer ends it young, with its cost
	// What the peer asked of our NIC (acceptor side only): a young end is
	// charged by it (youngCost).
	asked     atomic.Bool   // a WRITE into one of our regions was applied
	readBytes atomic.Uint64 // bytes of our regions its READs were served
	penalized atomic.Bool   // Penalize charged its source already

	dead      atomic.Bool
	closed    atomic.Bool // Close was called: Post and Poll say ErrClosed
	err       error       // set before dead
	opErr     error       // what ops still outstanding complete with
	failOnce  sync.Once
	done      chan struct{}
	after     fabric.AfterList // AfterDone's, started when done closes
	closeOnce sync.Once
}

type pending struct {
	id    uint64
	kind  fabric.OpKind
	local *region // referenced until completed
	loff  int
	n     int
	err   error
}

func ceilPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// newConn registers an established socket with a poller. vanished
// (acceptor side, may be nil) is told if the peer ends it young.
func newConn(fd int, d *domain, o fabric.Options, peerData []byte, peerDepth int, bells *eventbell.Set, vanished func(float64)) (*conn, error) {
	p, err := pollerFor()
	if err != nil {
		return nil, err
	}
	c := &conn{
		fd:          fd,
		p:           p,
		d:           d,
		peerData:    peerData,
		bells:       bells,
		source:      bells.AllocSource(),
		depth:       o.QueueDepth,
		peerDepth:   max(1, min(peerDepth, maxQueueDepth)),
		ops:         make([]pending, ceilPow2(o.QueueDepth)),
		sendTimeout: o.SendTimeout,
		vanished:    vanished,
		done:        make(chan struct{}),
	}
	c.mask = uint64(len(c.ops) - 1)
	c.born = nanotime()
	c.lastRx.Store(c.born)
	if err := p.add(c); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *conn) Alloc(size int) (*fabric.Region, error) { return c.d.alloc(size) }
func (c *conn) PeerData() []byte                       { return c.peerData }
func (c *conn) Done() <-chan struct{}                  { return c.done }

func (c *conn) Err() error {
	if !c.dead.Load() {
		return nil
	}
	return c.err
}

// fail ends the connection once: the first cause wins. The socket is shut
// down (the peer sees it at once) but stays open until Close, so that no
// descriptor number is reused under a reader.
func (c *conn) fail(err error) {
	c.failOnce.Do(func() {
		c.err = err
		c.opErr = fabric.ErrPeerGone
		if errors.Is(err, fabric.ErrClosed) {
			c.opErr = fabric.ErrClosed
		}
		c.dead.Store(true)
		// Out of the poller first: a shutdown of a socket still in its
		// epoll set raises a hang-up there, and the poller's thread is
		// woken only to find the connection dead (a client's Close over
		// loopback: 62 µs instead of 89 at the median, 8 of 8 rounds).
		c.p.remove(c)
		_ = unix.Shutdown(c.fd, unix.SHUT_RDWR)
		if c.vanished != nil && !c.closed.Load() && nanotime()-c.born < int64(youngAge) {
			c.vanished(c.youngCost()) // the peer dropped it young: churn pacing
		}
		close(c.done)
		c.after.End()
	})
}

// AfterDone implements fabric.DoneNotifier: a connection watched so costs
// no goroutine start at the join and no wake-up to stop the watch at
// Close, on either side (each a thread woken on a small machine).
func (c *conn) AfterDone(f func()) (stop func() bool) { return c.after.Add(f) }

// youngCost is what a connection its peer dropped young cost us beyond
// the work it asked for, in handshakes: the handshake itself when no
// request (WRITE) ever followed it, and one per readCharge bytes of
// READs (a loop of whole-region READs and a reset). An honest client
// that connects, writes its request, reads its answer and leaves costs
// nothing, however often it does so.
func (c *conn) youngCost() float64 {
	cost := float64(c.readBytes.Load()) / readCharge
	if !c.asked.Load() {
		cost++
	}
	return cost
}

// Penalize implements fabric.Penalizer (acceptor side): the source is
// charged penaltyCost handshakes at once, however the connection ends.
func (c *conn) Penalize() {
	if c.vanished != nil && c.penalized.CompareAndSwap(false, true) {
		c.vanished(penaltyCost)
	}
}

func (c *conn) Close() error { return c.CloseBy(time.Now().Add(closeFlushTimeout)) }

// CloseBy implements fabric.DeadlineCloser: Close, with the wait for the
// staged answers ending by deadline at the latest.
func (c *conn) CloseBy(deadline time.Time) error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		if !c.dead.Load() {
			c.drain(deadline)
		}
		c.fail(fabric.ErrClosed)
		// rx and tx hold their locks only for non-blocking work: once
		// both are ours, nothing touches the socket or region memory.
		c.rxMu.Lock()
		c.txMu.Lock()
		c.tx.stopTimer()
		c.tx.dropRefs()
		c.rx.drop()
		c.armMu.Lock()
		_ = unix.Close(c.fd)
		c.fd = -1
		c.armMu.Unlock()
		c.txMu.Unlock()
		c.rxMu.Unlock()
		c.d.closeAll()
		c.bells.FreeSource(c.source) // after rx: no ring names it any more
	})
	return nil
}

// BellSource implements fabric.RingSource (acceptor side).
func (c *conn) BellSource() int { return c.source }

// drain acknowledges what the NIC already applied, as a NIC would: the
// application may have seen a WRITE land and closed at once. It stops
// reading (after the frame rx is in) and gives the staged responses at
// most closeFlushTimeout to go out (until deadline, if sooner), and less
// to a peer that takes none of them for drainIdle.
func (c *conn) drain(deadline time.Time) {
	c.stopping.Store(true)
	c.rxMu.Lock()
	c.rxStop = true
	c.rxMu.Unlock()
	if d := time.Now().Add(closeFlushTimeout); d.Before(deadline) {
		deadline = d
	}
	for {
		err := c.flush()
		c.txMu.Lock()
		empty, progress := c.tx.empty(), c.tx.progress
		c.txMu.Unlock()
		if empty || err != nil || c.dead.Load() || time.Now().After(deadline) ||
			progress != 0 && nanotime()-progress > int64(drainIdle) {
			return
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// drainIdle: Close stops waiting for a peer that took none of its last
// responses for this long.
const drainIdle = 100 * time.Millisecond

func localErr(i int, format string, args ...any) error {
	return fmt.Errorf("%w: op %d: %s", fabric.ErrLocalAccess, i, fmt.Sprintf(format, args...))
}

// deadErr is what Post and Poll return on a dead connection.
func (c *conn) deadErr() error {
	if c.closed.Load() {
		return fabric.ErrClosed
	}
	return c.err
}

// Post checks the whole batch, then publishes it, stages its frames and
// sends what the socket takes now (the doorbell); the poller sends the
// rest when the socket has room. It never waits on the socket.
func (c *conn) Post(ops []fabric.Op) error {
	if c.dead.Load() {
		return c.deadErr()
	}
	if len(ops) == 0 {
		return nil
	}
	t := c.tail.Load()
	if int(t-c.head.Load())+len(ops) > c.depth {
		return fabric.ErrQueueFull
	}
	for i := range ops {
		op := &ops[i]
		r, err := c.checkLocal(i, op)
		if err != nil {
			c.unref(t, t+uint64(i))
			if c.dead.Load() {
				// Close freed the regions under us: that is the error.
				return c.deadErr()
			}
			return err
		}
		c.ops[(t+uint64(i))&c.mask] = pending{id: op.ID, kind: op.Kind, local: r, loff: op.LocalOff, n: op.Len}
	}
	end := t + uint64(len(ops))
	c.txMu.Lock()
	if c.dead.Load() {
		c.txMu.Unlock()
		c.unref(t, end)
		return c.deadErr()
	}
	// Publish before sending: a response may be back before we return.
	c.tail.Store(end)
	for i := range ops {
		op := &ops[i]
		if op.Kind == fabric.OpRead {
			c.tx.putReq(frameRead, op.Remote.Key, op.Remote.Addr+op.RemoteOff, op.Len, nil)
		} else {
			c.tx.putReq(frameWrite, op.Remote.Key, op.Remote.Addr+op.RemoteOff, op.Len, op.Local.Bytes()[op.LocalOff:op.LocalOff+op.Len])
		}
	}
	c.txMu.Unlock()
	if !c.corked.Load() {
		c.send()
	}
	return nil
}

// send sends what is staged; a failure fails the connection, and the ops
// posted complete with it.
func (c *conn) send() {
	if err := c.flush(); err != nil {
		c.fail(fmt.Errorf("%w: %v", fabric.ErrPeerGone, err))
	}
}

// Cork implements fabric.Corker: Post and RingBell only stage until
// Uncork.
func (c *conn) Cork() { c.corked.Store(true) }

// Uncork implements fabric.Corker: what Post and RingBell staged since
// Cork goes out with one send.
func (c *conn) Uncork() {
	c.corked.Store(false)
	c.send()
}

func (c *conn) checkLocal(i int, op *fabric.Op) (*region, error) {
	r := c.d.local(op.Local)
	if err := fabric.CheckOp(i, op, r != nil); err != nil {
		return nil, err
	}
	if op.Len > MaxOpLen {
		return nil, localErr(i, "%d bytes, at most %d in one op", op.Len, MaxOpLen)
	}
	if !r.acquire() {
		return nil, localErr(i, "region is closed")
	}
	return r, nil
}

func (c *conn) unref(from, to uint64) {
	for i := from; i != to; i++ {
		e := &c.ops[i&c.mask]
		if e.local != nil {
			e.local.release()
			e.local = nil
		}
	}
}

// readEvery: Poll reads the socket itself at every readEvery-th empty
// poll in a row (the first included), not at each: a response is not
// back in the time of a few polls, and each read is a syscall.
const readEvery = 4

// yieldEvery is how many empty polls in a row Poll makes before it yields
// the thread: a syscall of ~0.2µs in every 16 polls. In a process with one
// P, a thread that the poller or a syscall woke in this process waits for
// the spinning one to give up its core, so Poll yields from the start of a
// wait. With more Ps, yields early in a wait only trade the core with the
// peer's threads (go-ycsb over loopback at GOMAXPROCS 2: ~35% more ops/s
// without them); a wait past yieldAfter empty polls (tens of µs) is one
// where the peer's thread may be waiting for this core (one GET at a time
// in rfp mode: p99 ~400 µs without those yields, ~100 µs with them).
const (
	yieldEvery = 16
	yieldAfter = 256
)

func osYield() { _, _, _ = unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// busyWindow is how long after the last bytes read Poll keeps reading the
// socket itself: a busy connection's next response is then taken by the
// thread waiting for it, not by a poller thread that must first be woken
// and scheduled. Idle connections leave it to the poller.
const busyWindow = 200 * time.Microsecond

// Poll drains completions in posting order. On a busy connection it first
// reads what the socket holds. Once the connection is dead, Poll
// completes what is outstanding with its failure, then reports the error.
func (c *conn) Poll(cs []fabric.Completion) (int, error) {
	h := c.head.Load()
	end := c.resp.Load()
	if end == h {
		if c.dead.Load() {
			return c.pollDead(cs, h)
		}
		c.idle++
		outstanding := c.tail.Load() != end
		if c.idle%readEvery == 1 && (outstanding || nanotime()-c.lastRx.Load() < int64(busyWindow)) {
			if outstanding {
				c.drove()
			}
			c.pollRead(false)
			c.flushDueAcks()
			end = c.resp.Load()
		}
		if end == h {
			if outstanding && c.idle%yieldEvery == 0 && (c.idle >= yieldAfter || runtime.GOMAXPROCS(0) == 1) {
				// Waiting on the peer, whose NIC (and ours, a poller
				// thread) may need this core: give it up now and then
				// (sched_yield returns at once when nothing else runs).
				osYield()
			}
			return 0, nil
		}
	}
	c.idle = 0
	n := 0
	for h != end && n < len(cs) {
		e := &c.ops[h&c.mask]
		cs[n] = fabric.Completion{ID: e.id, Kind: e.kind, Err: e.err}
		h++
		n++
	}
	c.head.Store(h)
	return n, nil
}

// pollDead completes, once rx is out of the way, what the connection
// left outstanding.
func (c *conn) pollDead(cs []fabric.Completion, h uint64) (int, error) {
	c.rxMu.Lock()
	end, t := c.resp.Load(), c.tail.Load()
	for i := end; i != t; i++ {
		c.ops[i&c.mask].err = c.opErr
	}
	c.unref(end, t)
	c.resp.Store(t)
	c.rxMu.Unlock()
	if t == h {
		return 0, c.deadErr()
	}
	return c.Poll(cs)
}

// RingBell implements fabric.Ringer: a frame the peer's NIC turns into a
// ring of its listener's doorbell.
func (c *conn) RingBell(i int) error {
	if c.closed.Load() {
		return fabric.ErrClosed
	}
	c.txMu.Lock()
	if c.dead.Load() {
		c.txMu.Unlock()
		return c.opErrOrGone()
	}
	c.tx.putReq(frameRing, uint32(i), 0, 0, nil)
	c.txMu.Unlock()
	if c.corked.Load() {
		return nil
	}
	return c.flush()
}

func (c *conn) opErrOrGone() error {
	if c.err != nil {
		return c.err
	}
	return fabric.ErrPeerGone
}

// Pump implements fabric.Pumper: a read of what the socket holds, unless
// another goroutine is reading it.
func (c *conn) Pump() {
	if !c.dead.Load() {
		c.drove()
		c.pollRead(true)
		c.flushDueAcks()
	}
}

// WritesInOrder implements fabric.InOrderWriter: the peer's NIC applies
// the frames of this one stream in the order they were sent.
func (c *conn) WritesInOrder() bool { return true }

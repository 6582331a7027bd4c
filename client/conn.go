package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/rfp"
)

// conn is one server connection. Callers queue their calls in its inbox;
// the driver of its poll group (group.go) moves them into the rings,
// drives the protocol engine (posts what it asks, polls completions and
// feeds them back with the clock, rings doorbells) and hands results to
// their callers. mu guards the engine: the driver holds it for a step,
// and readers of its counters briefly.
type conn struct {
	// What a pass reads to skip a connection with nothing due, together
	// on one cache line: a group may hold a thousand connections.
	posted   int          // the driver's: operations posted, not completed
	queued   int          // the driver's: calls waiting for room in a ring
	nextDue  int64        // the driver's: when the engine next has work
	inboxLen atomic.Int32 // calls in the inbox
	// Gathering (a post is a system call: tcp): callers the driver woke
	// whose next call has not come, and until when it holds the calls
	// that did (the driver's), so that they go out in one post.
	gatherWant atomic.Int32
	gatherTill int64
	shut       atomic.Bool // closed: no more calls (set under inMu)
	listed     atomic.Bool // in g's busy set (or on its way there)
	gather     bool        // a post is a system call (tcp): gather calls
	// cold: its NIC is a thread (tcp) and no answer came yet: the
	// peer's threads were just woken, and the driver yields its core
	// more often meanwhile (group.go, osYieldColdNS).
	cold      atomic.Bool
	copyReads bool   // READs are copies (shm): fetched at once (rfp.EngineConfig)
	oneP      bool   // GOMAXPROCS was 1 at dial: a lone caller yields (alone.go)
	alones    uint64 // calls and batches run alone to the end (alone.go; under mu)
	onHost    bool   // the server runs on this host (fabric.SharesHost): stalls nap (stall.go)

	mu       sync.Mutex
	fc       fabric.Conn
	ringer   fabric.Ringer      // nil when the fabric has no doorbells
	watcher  fabric.BellWatcher // nil when the fabric cannot see a blocked partition
	corker   fabric.Corker      // nil where a post and a ring cost no send each
	eng      *rfp.Engine
	layout   rfp.Layout
	comps    []fabric.Completion
	slotCall []*call // the call in each ring slot, nil if none (or its caller gave up)
	slotted  int     // slotCall's non-nil entries (the driver's, as slotCall)
	closed   bool
	// wokeBell: this step rang a partition blocked on its bell; the
	// driver gives up its core once (group.go).
	wokeBell bool

	g *pollGroup

	inMu  sync.Mutex
	inbox []*call // queued by callers, not yet taken by the driver
	spare []*call

	// The driver's: calls waiting for room in a ring, per partition
	// (callqueue.go); the group's yield count it last told the engine of.
	queues   []callQueue
	yieldsAt uint32
	// endsQueued: queued calls whose context can end (call.done), which
	// wakeEnded looks at; a thousand queued calls that cannot end are
	// skipped without touching them.
	endsQueued int
}

// pollBatch is how many completions one Poll reaps at most.
const pollBatch = 64

// dialRetries is how many times dial tries again after the server closed
// the handshake unanswered: a server sheds the oldest pending handshakes
// from one source past a cap (a burst of honest dials can meet it), so a
// dial it dropped is worth a few more tries, after a short jittered pause.
const dialRetries = 6

// dial connects to the server at addr.
func dial(ctx context.Context, addr string, cfg config, g *pollGroup) (*conn, error) {
	dc := rfp.DialConfig{Slots: cfg.engine.Window, Fabric: cfg.fabric, AuthToken: cfg.authToken}
	link, err := rfp.Dial(ctx, addr, dc)
	for try := 0; err != nil && errors.Is(err, fabric.ErrRejected) && try < dialRetries; try++ {
		pause := time.Duration(rand.Int64N(int64(10*time.Millisecond) << try))
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return nil, fmt.Errorf("jakiro: dial %s: %w (%v)", addr, err, ctx.Err())
		}
		link, err = rfp.Dial(ctx, addr, dc)
	}
	if err != nil {
		return nil, fmt.Errorf("jakiro: dial %s: %w", addr, err)
	}
	ringer, _ := link.Conn.(fabric.Ringer)
	watcher, _ := link.Conn.(fabric.BellWatcher)
	ecfg := cfg.engine
	ecfg.Bells = ringer != nil
	ecfg.QuietRingNS = rfp.QuietRingOf(addr)
	if watcher != nil && ringer != nil {
		ecfg.Blocked = watcher.BellBlocked
	}
	_, ecfg.SoftNIC = link.Conn.(fabric.Pumper)
	ecfg.CopyReads = fabric.ReadsCopy(link.Conn)
	ecfg.Mode = ecfg.Mode.Resolve(ecfg.SoftNIC)
	eng, err := rfp.NewEngine(link.Local, link.Welcome, ecfg)
	if err != nil {
		link.Conn.Close()
		return nil, fmt.Errorf("jakiro: dial %s: %w", addr, err)
	}
	l := link.Welcome.Layout
	cn := &conn{fc: link.Conn, ringer: ringer, watcher: watcher, eng: eng, layout: l, g: g, gather: ecfg.SoftNIC, copyReads: ecfg.CopyReads,
		comps: make([]fabric.Completion, pollBatch), slotCall: make([]*call, l.Partitions*l.Slots),
		queues: make([]callQueue, l.Partitions)}
	if link.Control != nil {
		eng.Queue(*link.Control) // goes out with the first requests
	}
	cn.corker, _ = link.Conn.(fabric.Corker)
	cn.onHost = fabric.SharesHost(link.Conn)
	cn.oneP = runtime.GOMAXPROCS(0) == 1
	cn.cold.Store(ecfg.SoftNIC)
	return cn, nil
}

// epoch is where every engine's clock counts from: one clock for all, so a
// driver reads it once per pass over its connections.
var epoch = time.Now()

// clock is the engines' clock, in nanoseconds.
func clock() int64 { return int64(time.Since(epoch)) }

// close disconnects. Operations in flight fail with ErrClosed.
func (c *conn) close() error {
	c.inMu.Lock()
	c.shut.Store(true)
	c.inMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	return c.fc.Close()
}

// done is closed when the connection ends.
func (c *conn) done() <-chan struct{} { return c.fc.Done() }

// err says why the connection or its engine stopped, if it did.
func (c *conn) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.eng.Err(); err != nil {
		return err
	}
	return c.fc.Err()
}

func (c *conn) counters() rfp.Counters {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.eng.Counters()
}

func (c *conn) rfs() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.eng.RFS()
}

func (c *conn) fetchDelay() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Duration(c.eng.FetchDelayNS())
}

// check validates a key and value against the server's limits.
func (c *conn) check(key, value []byte) error {
	if len(key) == 0 || len(key) > rfp.MaxKeyLen {
		return fmt.Errorf("%w: key is %d bytes", ErrBadKey, len(key))
	}
	if len(value) > c.layout.MaxValue {
		return fmt.Errorf("%w: %d bytes, server maximum %d", ErrTooLarge, len(value), c.layout.MaxValue)
	}
	return nil
}

func (c *conn) partition(key []byte) int {
	return rfp.PartitionOf(rfp.KeyHash(key), c.layout.Partitions)
}

// enqueue queues calls for the driver.
func (c *conn) enqueue(calls ...*call) error {
	c.inMu.Lock()
	if c.shut.Load() {
		c.inMu.Unlock()
		return ErrClosed
	}
	c.inbox = append(c.inbox, calls...)
	c.inboxLen.Add(int32(len(calls)))
	c.inMu.Unlock()
	if c.gather {
		c.gatherWant.Add(-1) // one caller back (or a new one)
	}
	c.g.announce(c)
	return nil
}

// step is the driver's turn at this connection: queued calls into the
// rings (unless it holds them, gathering), then one step of the engine,
// answers to their callers (woken, but the driver's own), and the requests
// that answers made room for posted at once. It reports the callers woken,
// whether it rang a blocked partition, whether nothing is left in flight
// or queued, and whether the connection has room its callers' next
// requests could take at once.
func (c *conn) step(driver *waiter, now int64) (woke int, rang, idle, hungry bool) {
	shut := c.shut.Load()
	hold := c.gather && !shut && c.holding(now)
	if c.posted == 0 && c.queued == 0 && now < c.nextDue && (hold || c.inboxLen.Load() == 0) && !shut {
		return 0, false, false, false // nothing due: its answers are not fetched yet
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !hold {
		c.takeInbox(now)
	}
	if c.closed {
		return c.failLocked(ErrClosed, driver), false, true, false
	}
	if y := c.g.yields; y != c.yieldsAt {
		c.yieldsAt = y
		c.eng.Yielded()
	}
	err := c.submitLocked(driver, now)
	if err == nil {
		woke, err = c.progressLocked(now, driver)
	}
	woke += c.deliverLocked(driver)
	if err == nil && c.queued > 0 {
		if err = c.submitLocked(driver, now); err == nil {
			err = c.flushLocked()
		}
	}
	if err != nil {
		woke += c.failLocked(fmt.Errorf("jakiro: connection failed: %w", err), driver)
	}
	if c.gather && woke > 0 && c.gatherWant.Add(int32(woke)) == int32(woke) {
		c.gatherTill = now + gatherNS
	}
	rang, c.wokeBell = c.wokeBell, false
	c.nextDue = c.eng.Next()
	return woke, rang, c.eng.Active() == 0 && c.queued == 0, c.queued == 0
}

// holding: callers woken here have not all called again, and the driver
// holds the calls of those that did (for gatherNS at most).
func (c *conn) holding(now int64) bool {
	want := c.gatherWant.Load()
	if want == 0 {
		return false
	}
	if want < 0 || now >= c.gatherTill {
		c.gatherWant.Store(0) // callers that were not woken came too, or time is up
		return false
	}
	return true
}

// takeInbox moves the callers' new calls into the partitions' queues.
func (c *conn) takeInbox(now int64) {
	if c.inboxLen.Load() == 0 {
		return
	}
	c.inMu.Lock()
	in := c.inbox
	c.inbox, c.spare = c.spare[:0], in
	c.inboxLen.Store(0)
	c.inMu.Unlock()
	for i, cl := range in {
		in[i] = nil
		if cl.state.Load() == callAbandoned {
			continue
		}
		cl.queuedAt = now
		c.queues[cl.p].push(cl)
		if cl.done != nil {
			c.endsQueued++
		}
		c.queued++
	}
}

// submitLocked moves queued calls into the rings while they have room, in
// the queues' order (callqueue.go).
func (c *conn) submitLocked(driver *waiter, now int64) error {
	if c.queued == 0 {
		return nil
	}
	for p := range c.queues {
		q := &c.queues[p]
		for q.len() > 0 && c.eng.Free(p) {
			cl := q.next(now)
			c.queued--
			if cl.done != nil {
				c.endsQueued--
			}
			if !cl.state.CompareAndSwap(callQueued, callTaking) {
				continue // abandoned
			}
			// Each request's own send time, not the pass's: requests sent
			// together would all fall due for their first READ at once,
			// though a partition answers them one after another (with
			// one clock for all, most first READs missed). Where READs
			// are copies (shm) they fall due at once anyway: the pass's
			// clock serves (a clock read is ~10% of a pipelined GET).
			t := now
			if !c.copyReads {
				t = clock()
			}
			slot, err := c.eng.Submit(t, p, cl.op, cl.key, cl.value, cl.ttl)
			cl.state.Store(callSent)
			if err != nil {
				cl.finish(0, nil, err, driver)
				if c.eng.Err() != nil {
					return err
				}
				continue
			}
			c.slotCall[slot] = cl
			c.slotted++
		}
	}
	return nil
}

// failLocked ends every call of the connection with err.
func (c *conn) failLocked(err error, driver *waiter) (woke int) {
	for i, cl := range c.slotCall {
		if cl != nil {
			c.slotCall[i] = nil
			c.slotted--
			if cl.finish(0, nil, err, driver) {
				woke++
			}
		}
	}
	for p := range c.queues {
		for q := &c.queues[p]; q.len() > 0; {
			if cl := q.pop(); cl.finish(0, nil, err, driver) {
				woke++
			}
		}
	}
	c.queued, c.endsQueued = 0, 0
	return woke
}

// retire takes the idle connection out of its group's busy set; false if
// calls came in meanwhile and it stays.
func (c *conn) retire() bool {
	c.listed.Store(false)
	return c.inboxLen.Load() == 0 || !c.listed.CompareAndSwap(false, true)
}

// handTo hands the group's driving to a caller with a call on this
// connection, other than the driver w, and returns it; nil if there is
// none.
func (c *conn) handTo(w *waiter) *waiter {
	for i := 0; c.slotted > 0 && i < len(c.slotCall); i++ {
		if cl := c.slotCall[i]; cl != nil {
			// cl is its caller's again once handed: read before.
			if h := cl.w; h != w && cl.state.Load() == callSent && h.hand(c.g.num) {
				return h
			}
		}
	}
	for p := range c.queues {
		q := &c.queues[p]
		for _, cl := range q.q[q.h:] {
			if h := cl.w; h != w && cl.state.Load() == callQueued && h.hand(c.g.num) {
				return h
			}
		}
	}
	if c.gather && c.inboxLen.Load() > 0 {
		// Calls held while their driver gathers (holding): one of their
		// callers drives on, so the driver leaves now, and its own next
		// call is one of those awaited.
		c.inMu.Lock()
		defer c.inMu.Unlock()
		for _, cl := range c.inbox {
			if h := cl.w; h != w && cl.state.Load() == callQueued && h.hand(c.g.num) {
				return h
			}
		}
	}
	return nil
}

// wakeEnded wakes the callers of this connection's calls whose context
// ended: those in the rings, and with queues those still queued. The
// driver's.
func (c *conn) wakeEnded(driver *waiter, queues bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := 0; c.slotted > 0 && i < len(c.slotCall); i++ {
		if cl := c.slotCall[i]; cl != nil && cl.w != driver && cl.state.Load() == callSent && cl.ended() {
			cl.w.signal()
		}
	}
	if !queues {
		return
	}
	for p := 0; c.endsQueued > 0 && p < len(c.queues); p++ {
		q := &c.queues[p]
		for _, cl := range q.q[q.h:] {
			if cl.w != driver && cl.state.Load() == callQueued && cl.ended() {
				cl.w.signal()
			}
		}
	}
	if c.inboxLen.Load() > 0 {
		c.inMu.Lock()
		defer c.inMu.Unlock()
		for _, cl := range c.inbox {
			if cl.w != driver && cl.state.Load() == callQueued && cl.ended() {
				cl.w.signal()
			}
		}
	}
}

// progressLocked is one step of the engine: whatever fell due (answers
// found in local memory go to their callers before anything new is
// posted: rfp.Engine.Results), posts and rings, then completions.
func (c *conn) progressLocked(now int64, driver *waiter) (woke int, err error) {
	e := c.eng
	if now >= e.Next() {
		e.Tick(now)
		if len(e.Results()) > 0 {
			woke = c.deliverLocked(driver)
		}
	}
	if err := c.flushLocked(); err != nil {
		return woke, err
	}
	return woke, c.pollLocked(now)
}

// pollLocked hands the fabric's completions to the engine.
func (c *conn) pollLocked(now int64) error {
	e := c.eng
	n, err := c.fc.Poll(c.comps)
	if err != nil {
		return e.Fail(err)
	}
	c.posted -= n
	for _, comp := range c.comps[:n] {
		if err := e.Complete(now, comp); err != nil {
			return err
		}
	}
	return nil
}

// flushLocked posts the engine's pending ops, then rings the doorbells
// that announce them.
func (c *conn) flushLocked() error {
	e := c.eng
	// Where a post and a ring are a send each (tcp), requests and the
	// rings that announce them go out together.
	corked := c.corker != nil && len(e.Rings()) > 0
	if corked {
		c.corker.Cork()
	}
	if ops := e.Pending(); len(ops) > 0 {
		if err := c.fc.Post(ops); err != nil {
			if corked {
				c.corker.Uncork()
			}
			return e.Fail(err)
		}
		c.posted += len(ops)
		e.Posted()
	}
	if rings := e.Rings(); len(rings) > 0 {
		for _, p := range rings {
			blocked := c.watcher != nil && c.watcher.BellBlocked(p)
			if c.watcher != nil && e.Reminder(p) && !blocked {
				e.Unrung() // p is awake and was told of its requests
				continue
			}
			c.ringer.RingBell(p) // a lost ring is made up by the next one the schedule sends
			c.wokeBell = c.wokeBell || blocked
		}
		e.Rang()
	}
	if corked {
		c.corker.Uncork()
	}
	return nil
}

// deliverLocked hands finished requests to their callers.
func (c *conn) deliverLocked(driver *waiter) (woke int) {
	rs := c.eng.Results()
	if c.gather && len(rs) > 0 && c.cold.Load() {
		c.cold.Store(false)
	}
	for _, r := range rs {
		cl := c.slotCall[r.Slot]
		if cl != nil {
			c.slotCall[r.Slot] = nil
			c.slotted--
		}
		if cl != nil && cl.finish(r.Status, r.Value, nil, driver) {
			woke++
		}
	}
	c.eng.Consumed()
	return woke
}

// do runs one operation on partition p; the value is appended to dst.
func (c *conn) do(ctx context.Context, p int, op rfp.Op, key, value []byte, ttl uint32, dst []byte) ([]byte, error) {
	if c.g.take() {
		// Nobody drives the group: this caller does. Alone, it runs its
		// call in place (alone.go); else its call skips the inbox when it
		// can go straight into a ring.
		if dst, ok, err := c.alone(ctx, p, op, key, value, ttl, dst); ok {
			return dst, err
		}
		w := getWaiter()
		w.begin(1)
		w.setCtx(ctx)
		cl := &w.one
		cl.reset(w, p, op, key, value, ttl, dst)
		if !c.direct(cl, w) {
			if err := c.enqueue(cl); err != nil {
				c.g.release(w)
				putWaiter(w)
				return dst, err
			}
		}
		return c.outcome(w, cl, dst, c.g.awaitHeld(ctx, w))
	}
	w := getWaiter()
	w.begin(1)
	w.setCtx(ctx)
	cl := &w.one
	cl.reset(w, p, op, key, value, ttl, dst)
	if err := c.enqueue(cl); err != nil {
		putWaiter(w)
		return dst, err
	}
	return c.outcome(w, cl, dst, c.g.await(ctx, w))
}

// outcome is the result of w's call cl, once awaited (err: the wait's).
func (c *conn) outcome(w *waiter, cl *call, dst []byte, err error) ([]byte, error) {
	if err != nil && w.giveUp(cl) {
		return dst, err // w stays with the driver, which may still hold cl
	}
	dst, st, err := cl.val, cl.st, cl.err
	putWaiter(w)
	if err != nil {
		return dst, err
	}
	return dst, statusErr(st)
}

// direct puts cl, the call of the caller w that holds its group's
// driver role, straight into a ring and posts it: no inbox, no queue, no
// lock but the engine's. It declines (false) where that would pass calls
// queued before it, where the ring is full, and where posts are gathered
// (tcp); the caller then queues cl as any other.
func (c *conn) direct(cl *call, w *waiter) bool {
	if c.gather || c.inboxLen.Load() != 0 || c.shut.Load() {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.queued != 0 || !c.eng.Free(cl.p) {
		return false
	}
	now := clock()
	cl.state.Store(callSent)
	slot, err := c.eng.Submit(now, cl.p, cl.op, cl.key, cl.value, cl.ttl)
	if err != nil {
		cl.finish(0, nil, err, w)
		return true
	}
	c.slotCall[slot] = cl
	c.slotted++
	c.g.list(c)
	err = c.flushLocked() // its WRITE first
	if err == nil {
		_, err = c.progressLocked(now, w)
	}
	c.deliverLocked(w)
	if err != nil {
		c.failLocked(fmt.Errorf("jakiro: connection failed: %w", err), w)
	}
	c.nextDue = c.eng.Next()
	return true
}

// run executes a batch pipelined over every partition's window. It
// returns the first connection or context error; per-operation outcomes
// are in the batch.
func (c *conn) run(ctx context.Context, b *Batch) error {
	n := 0
	for i := range b.ops {
		o := &b.ops[i]
		if o.err = cmp.Or(o.refused, c.check(o.key, o.value)); o.err == nil {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	w := getWaiter()
	w.begin(n)
	w.setCtx(ctx)
	b.calls = b.calls[:0]
	for i := range b.ops {
		if o := &b.ops[i]; o.err == nil {
			o.c.reset(w, c.partition(o.key), o.op, o.key, o.value, o.ttl, o.c.val[:0])
			b.calls = append(b.calls, &o.c)
		}
	}
	var err error
	switch {
	case c.g.take():
		// Nobody drives the group: alone in it, this caller runs its
		// batch in place (alone.go); else it drives as any driver.
		switch c.aloneRun(b.calls, w) {
		case aloneDone:
			c.g.releaseAlone()
		case aloneDeclined:
			if err = c.enqueue(b.calls...); err != nil {
				c.g.release(w)
				putWaiter(w)
				return err
			}
			fallthrough
		default:
			err = c.g.awaitHeld(ctx, w)
		}
	default:
		if err = c.enqueue(b.calls...); err != nil {
			putWaiter(w)
			return err
		}
		err = c.g.await(ctx, w)
	}
	if err != nil && w.giveUp(b.calls...) {
		b.detach()
		return err // w stays with the driver, which may still hold its calls
	}
	putWaiter(w)
	var connErr error
	for i := range b.ops {
		if o := &b.ops[i]; o.err == nil {
			if o.c.err != nil {
				// The connection failed under it: Batch.settle gives it
				// what the caller of a single operation would get
				// (ErrUnavailable wrapping ErrConnLost), not the raw
				// cause (ErrClosed for a connection the client retired).
				connErr = cmp.Or(connErr, o.c.err)
			} else {
				o.err = statusErr(o.c.st)
			}
		}
	}
	return connErr
}

package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/rfp"
)

// conn is one server connection: it drives the protocol engine (posts
// what it asks, polls completions and feeds them back with the clock,
// rings doorbells) and hands results to the callers waiting on its ring
// slots. Goroutines share it under mu, driving it in turn.
type conn struct {
	mu       sync.Mutex
	fc       fabric.Conn
	ringer   fabric.Ringer      // nil when the fabric has no doorbells
	watcher  fabric.BellWatcher // nil when the fabric cannot see a blocked partition
	eng      *rfp.Engine
	layout   rfp.Layout
	epoch    time.Time // the engine's clock counts from here
	comps    []fabric.Completion
	slotCall []*call // the caller waiting on each ring slot, nil if none
	free     []*call
	closed   bool
	// wokeBell: this step rang a partition blocked on its bell; the
	// waiter gives up its core once (wait.go).
	wokeBell bool
}

// pollBatch is how many completions one Poll reaps at most.
const pollBatch = 64

// call is one caller's pending operation.
type call struct {
	done bool
	st   rfp.Status
	val  []byte // copy of the value, reused across calls
}

// dialRetries is how many times dial tries again after the server closed
// the handshake unanswered: a server sheds the oldest pending handshakes
// from one source past a cap (a burst of honest dials can meet it), so a
// dial it dropped is worth a few more tries, after a short jittered pause.
const dialRetries = 6

// dial connects to the server at addr.
func dial(ctx context.Context, addr string, cfg config) (*conn, error) {
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
	_, softNIC := link.Conn.(fabric.Pumper)
	ecfg.Mode = ecfg.Mode.Resolve(softNIC)
	eng, err := rfp.NewEngine(link.Local, link.Welcome, ecfg)
	if err != nil {
		link.Conn.Close()
		return nil, fmt.Errorf("jakiro: dial %s: %w", addr, err)
	}
	l := link.Welcome.Layout
	return &conn{fc: link.Conn, ringer: ringer, watcher: watcher, eng: eng, layout: l, epoch: time.Now(),
		comps: make([]fabric.Completion, pollBatch), slotCall: make([]*call, l.Partitions*l.Slots)}, nil
}

// now is the engine's clock.
func (c *conn) now() int64 { return int64(time.Since(c.epoch)) }

// close disconnects. Operations in flight fail with ErrClosed.
func (c *conn) close() error {
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

func (c *conn) getCall() *call {
	if n := len(c.free); n > 0 {
		cl := c.free[n-1]
		c.free = c.free[:n-1]
		return cl
	}
	return &call{}
}

// forget detaches cl from its slot: its caller gave up, and the slot is
// reclaimed when the server's answer arrives.
func (c *conn) forget(cl *call) {
	for i, x := range c.slotCall {
		if x == cl {
			c.slotCall[i] = nil
		}
	}
}

// progressLocked is one step of the driver: whatever fell due, posts and
// rings, then completions, then results to their callers.
func (c *conn) progressLocked() error {
	if c.closed {
		return ErrClosed
	}
	e := c.eng
	now := c.now()
	if now >= e.Next() {
		e.Tick(now)
	}
	err := c.flushLocked()
	if err == nil {
		var n int
		if n, err = c.fc.Poll(c.comps); err != nil {
			e.Fail(err)
		}
		for _, comp := range c.comps[:n] {
			if err = e.Complete(now, comp); err != nil {
				break
			}
		}
	}
	c.deliverLocked()
	if err != nil {
		return fmt.Errorf("jakiro: connection failed: %w", err)
	}
	return nil
}

// flushLocked posts the engine's pending ops, then rings the doorbells
// that announce them.
func (c *conn) flushLocked() error {
	e := c.eng
	if ops := e.Pending(); len(ops) > 0 {
		if err := c.fc.Post(ops); err != nil {
			return e.Fail(err)
		}
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
	return nil
}

// deliverLocked hands finished requests to their callers.
func (c *conn) deliverLocked() {
	for _, r := range c.eng.Results() {
		cl := c.slotCall[r.Slot]
		c.slotCall[r.Slot] = nil
		if cl == nil {
			continue // its caller gave up (context ended)
		}
		cl.done, cl.st = true, r.Status
		cl.val = append(cl.val[:0], r.Value...)
	}
	c.eng.Consumed()
}

// submitLocked waits for a free slot in partition p and submits.
func (c *conn) submitLocked(ctx context.Context, p int, op rfp.Op, key, value []byte, ttl uint32, cl *call) error {
	var w waitState
	defer w.done()
	for !c.eng.Free(p) {
		if err := c.progressLocked(); err != nil {
			return err
		}
		if c.eng.Free(p) {
			break
		}
		if err := c.wait(ctx, &w); err != nil {
			return err
		}
	}
	if c.closed { // Close unmapped the engine's memory (maybe while we waited)
		return ErrClosed
	}
	slot, err := c.eng.Submit(c.now(), p, op, key, value, ttl)
	if err != nil {
		return err
	}
	cl.done = false
	c.slotCall[slot] = cl
	return nil
}

// do runs one operation on partition p synchronously; the value is
// appended to dst.
func (c *conn) do(ctx context.Context, p int, op rfp.Op, key, value []byte, ttl uint32, dst []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.getCall()
	if err := c.submitLocked(ctx, p, op, key, value, ttl, cl); err != nil {
		c.free = append(c.free, cl)
		return dst, err
	}
	var w waitState
	defer w.done()
	for !cl.done {
		if err := c.progressLocked(); err != nil {
			return dst, err
		}
		if cl.done {
			break
		}
		if err := c.wait(ctx, &w); err != nil {
			c.forget(cl)
			return dst, err
		}
	}
	dst = append(dst, cl.val...)
	st := cl.st
	c.free = append(c.free, cl)
	return dst, statusErr(st)
}

// run executes a batch pipelined over every partition's window. It
// returns the first connection or context error; per-operation outcomes
// are in the batch.
func (c *conn) run(ctx context.Context, b *Batch) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	next, done := 0, 0
	var w waitState
	defer w.done()
	for i := range b.ops {
		o := &b.ops[i]
		if o.err = c.check(o.key, o.value); o.err != nil {
			o.c.done = true
			done++
			continue
		}
		o.p = c.partition(o.key)
	}
	b.inflight = b.inflight[:0]
	for done < len(b.ops) {
		if c.closed { // Close unmapped the engine's memory (maybe while we waited)
			return ErrClosed
		}
		for next < len(b.ops) {
			o := &b.ops[next]
			if o.c.done { // failed validation
				next++
				continue
			}
			if !c.eng.Free(o.p) {
				break
			}
			slot, err := c.eng.Submit(c.now(), o.p, o.op, o.key, o.value, o.ttl)
			if err != nil {
				return err
			}
			c.slotCall[slot] = &o.c
			b.inflight = append(b.inflight, next)
			next++
		}
		if err := c.progressLocked(); err != nil {
			return err
		}
		// Only what is in flight can have finished: scan that, not the batch.
		kept := b.inflight[:0]
		for _, i := range b.inflight {
			if b.ops[i].c.done {
				done++
			} else {
				kept = append(kept, i)
			}
		}
		b.inflight = kept
		if done == len(b.ops) {
			break
		}
		if err := c.wait(ctx, &w); err != nil {
			for _, i := range b.inflight {
				c.forget(&b.ops[i].c)
			}
			return err
		}
	}
	for i := range b.ops {
		if o := &b.ops[i]; o.err == nil {
			o.err = statusErr(o.c.st)
		}
	}
	return nil
}

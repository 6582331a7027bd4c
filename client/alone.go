package client

import (
	"context"
	"fmt"
	"runtime"

	"github.com/jakiro-kv/jakiro/rfp"
)

// A caller alone: where a caller takes its group's driver role and the
// group has nothing else in flight, it runs its call the way a bare engine
// loop would (submit, post, then poll that connection until the answer is
// in), without the driver's machinery for many callers: no inbox, no pass
// over the group, no Gosched. At GOMAXPROCS 2 and more a Gosched with
// nothing else to run still wakes an idle P's thread (the runtime's
// wakep, a futex), and that thread takes a core from the server on a
// 2-core host: measured beside a bare engine loop on one shm connection,
// one GET at a time (reply mode, 10 rounds of both in one process), the
// driver's way was 1.21-1.35x the bare loop at p50 and 1.42-1.48x at p99,
// this way 1.08-1.09x and 1.07-1.21x; the same loop with a Gosched every
// goschedNS was back at 1.35x / 1.23x.
//
// A batch (Client.Run) goes the same way (aloneRun): one goroutine
// running windows of 8 GETs, beside a bare engine loop doing the same,
// was 1.20-1.37x the loop at p50 and 1.34-1.48x at p99 the driver's way,
// 1.13-1.20x and 1.20-1.29x in place.
//
// Company ends it: as soon as another caller queues a call on the group
// (or another of its connections is busy) or the answer takes longer than
// aloneNS, the call is registered as the driver's own call in a ring, and
// the caller drives as every driver does (yields, stall watch, its
// context). Only where READs are copies (shm): elsewhere a post costs a
// system call or a NIC's work, and the driver's gathering pays.
//
// Callers that are runnable but not calling yet (woken by the last
// driver, in this P's run queue) are no company: on 2 vCPUs, go-ycsb at 4
// threads, the lone caller yielding to them during its round trip did
// 0.89-1.32x the operations at 3-4.7x the p50, in every variant tried
// (docs/ARCHITECTURE.md, "On two cores the client has one").

// aloneNS bounds how long a lone caller polls in place: past it the
// driver's stall watch (stallNS) and context checks take over. A
// variable for the tests (0: every call joins at its first look).
var aloneNS int64 = stallNS

// aloneMay says whether a caller holding its group's driver role may run
// in place on c: READs are copies, and nothing else is in the group, its
// inbox, c's queues or c's rings. It returns true with c.mu held.
func (c *conn) aloneMay() bool {
	g := c.g
	if !c.copyReads || len(g.active) != 0 || g.nIn.Load() != 0 || c.inboxLen.Load() != 0 || c.shut.Load() {
		return false
	}
	c.mu.Lock()
	if c.closed || c.queued != 0 || c.slotted != 0 {
		c.mu.Unlock()
		return false
	}
	return true
}

// alone runs an operation on partition p in place, for a caller that
// holds its group's driver role, while nothing else shares the group (see
// above); false if it declined, having done nothing. Its waiter and call
// are made only if company comes (aloneJoin).
func (c *conn) alone(ctx context.Context, p int, op rfp.Op, key, value []byte, ttl uint32, dst []byte) ([]byte, bool, error) {
	g := c.g
	if !c.aloneMay() {
		return dst, false, nil
	}
	if !c.eng.Free(p) {
		c.mu.Unlock()
		return dst, false, nil
	}
	e := c.eng
	now := clock()
	slot, err := e.Submit(now, p, op, key, value, ttl)
	if err != nil {
		c.mu.Unlock()
		g.releaseAlone()
		return dst, true, err
	}
	if err = c.flushLocked(); err != nil || c.wokeBell {
		// A failed post fails the connection, and a ring that woke a
		// blocked partition wants the driver's yield: both the driver's.
		return c.aloneJoin(ctx, p, op, key, value, ttl, dst, slot, err)
	}
	c.mu.Unlock()
	end, yield := now+aloneNS, now+goschedNS
	for {
		if on, err := c.aloneLook(end, &yield); !on {
			return c.aloneJoin(ctx, p, op, key, value, ttl, dst, slot, err)
		}
		if rs := e.Results(); len(rs) > 0 {
			mine, st := false, rfp.Status(0)
			for _, r := range rs {
				// Nothing else had a caller (slotted was 0): the others
				// are answers to calls abandoned earlier.
				if r.Slot == slot {
					mine, st, dst = true, r.Status, append(dst, r.Value...)
				}
			}
			e.Consumed()
			if mine {
				c.alones++
				c.nextDue = e.Next()
				c.mu.Unlock()
				g.releaseAlone()
				return dst, true, statusErr(st)
			}
		}
		c.mu.Unlock()
	}
}

// aloneLook is one look of a lone caller at its connection: the engine's
// due work, posts, completions. It returns with c.mu held: on, the caller
// takes its results and goes on alone; else the driver's way takes over
// now (company came, the bound passed, the connection closed, a ring woke
// a blocked partition), with the connection's error if it failed.
func (c *conn) aloneLook(end int64, yield *int64) (on bool, err error) {
	now := clock()
	if now >= end || c.g.nIn.Load() != 0 || c.inboxLen.Load() != 0 {
		c.mu.Lock()
		return false, nil
	}
	if c.oneP && now >= *yield {
		// One P: a partition of this process, or any goroutine, runs
		// only when this one lets it (and no idle P is woken).
		runtime.Gosched()
		*yield = now + goschedNS
	}
	c.mu.Lock()
	if c.closed {
		return false, nil // the driver fails the calls
	}
	e := c.eng
	if now >= e.Next() {
		e.Tick(now)
	}
	if err = c.flushLocked(); err == nil && !c.wokeBell {
		err = c.pollLocked(now)
	}
	return err == nil && !c.wokeBell, err
}

// aloneJoin makes the operation in ring slot slot the driver's own call,
// as direct would have, fails the connection if err, and awaits it as a
// driver does. Called with c.mu held.
func (c *conn) aloneJoin(ctx context.Context, p int, op rfp.Op, key, value []byte, ttl uint32, dst []byte, slot int, err error) ([]byte, bool, error) {
	w := getWaiter()
	w.begin(1)
	w.setCtx(ctx)
	cl := &w.one
	cl.reset(w, p, op, key, value, ttl, dst)
	cl.state.Store(callSent)
	c.slotCall[slot] = cl
	c.slotted++
	c.g.list(c)
	if err != nil {
		c.failLocked(fmt.Errorf("jakiro: connection failed: %w", err), w)
	}
	c.nextDue = c.eng.Next()
	c.mu.Unlock()
	dst, err = c.outcome(w, cl, dst, c.g.awaitHeld(ctx, w))
	return dst, true, err
}

// aloneOutcome is what aloneRun did with a batch.
type aloneOutcome uint8

const (
	aloneDeclined aloneOutcome = iota // nothing: the caller queues its calls
	aloneDone                         // every call is done
	aloneJoined                       // its calls are in the rings and queues as the driver's own: await them
)

// aloneRun runs a batch's calls, those of the caller w that holds its
// group's driver role, in place while nothing else shares the group, as
// alone does one call; company, a full ring or the bound hand them to
// the driver's way (aloneJoined).
func (c *conn) aloneRun(calls []*call, w *waiter) aloneOutcome {
	if !c.aloneMay() {
		return aloneDeclined
	}
	e := c.eng
	now := clock()
	for _, cl := range calls {
		if c.queued != 0 || !e.Free(cl.p) {
			// No room: the rest wait in the queues, in order.
			cl.queuedAt = now
			c.queues[cl.p].push(cl)
			if cl.done != nil {
				c.endsQueued++
			}
			c.queued++
			continue
		}
		cl.state.Store(callSent)
		slot, err := e.Submit(now, cl.p, cl.op, cl.key, cl.value, cl.ttl)
		if err != nil {
			cl.finish(0, nil, err, w)
			continue
		}
		c.slotCall[slot] = cl
		c.slotted++
	}
	err := c.flushLocked()
	if err != nil || c.wokeBell || c.queued != 0 {
		return c.aloneRunJoin(w, err)
	}
	c.mu.Unlock()
	end, yield := now+aloneNS, now+goschedNS
	for {
		if on, err := c.aloneLook(end, &yield); !on {
			return c.aloneRunJoin(w, err)
		}
		if len(e.Results()) > 0 {
			c.deliverLocked(w) // only w's calls are in flight: nobody to wake
		}
		if w.pending.Load() == 0 {
			c.alones++
			c.nextDue = e.Next()
			c.mu.Unlock()
			return aloneDone
		}
		c.mu.Unlock()
	}
}

// aloneRunJoin hands the batch's calls in flight and queued to the
// driver's way, failing the connection if err. Called with c.mu held.
func (c *conn) aloneRunJoin(w *waiter, err error) aloneOutcome {
	c.g.list(c)
	if err != nil {
		c.failLocked(fmt.Errorf("jakiro: connection failed: %w", err), w)
	}
	c.nextDue = c.eng.Next()
	c.mu.Unlock()
	return aloneJoined
}

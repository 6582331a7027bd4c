package rfp

import (
	"fmt"

	"github.com/jakiro-kv/jakiro/fabric"
)

// nearMiss is the slack within which a late result still counts against
// the fetch delay.
const nearMiss = 2_000 // ns

// maxRetryGap caps the wait between not-ready READs of one request.
const maxRetryGap = 20_000 // ns

// Tick does what is due at now: fetch READs whose delay or retry gap has
// passed, replies that landed in local memory, doorbell rings.
func (e *Engine) Tick(now int64) {
	if e.failed != nil {
		return
	}
	l := e.layout
	next := Never
	for idx := range e.ops {
		rec := &e.ops[idx]
		switch rec.state {
		case opWaiting:
			if rec.due > now {
				next = min(next, rec.due)
			} else if !e.behindMiss(idx) {
				// A request held behind a miss is looked at again when
				// the older one's READ comes back.
				e.postRead(idx, 0, e.RFS())
			}
		case opReplyWait:
			p, s := idx/l.Slots, idx%l.Slots
			off := l.RespOff(p, s)
			var r Response
			if st, _ := ParseResponse(e.mem[off:off+l.RespSlot], rec.seq, l.MaxValue, &r); st == SlotReady {
				e.stats.Replied++
				e.policy.OnDone(true, now-rec.sent, now)
				e.finish(idx, now, r)
			} else {
				next = now // keep polling local memory
			}
		}
	}
	e.next = min(next, e.tickBells(now))
}

// Complete takes one fabric completion. An error completion fails the
// engine (the connection is unusable after one); the error is returned.
func (e *Engine) Complete(now int64, c fabric.Completion) error {
	if e.failed != nil {
		return e.failed
	}
	idx := int(c.ID >> idShift)
	if c.Err != nil {
		return e.Fail(fmt.Errorf("rfp: %v of slot %d: %w", c.Kind, idx, c.Err))
	}
	if idx >= len(e.ops) {
		return nil
	}
	rec := &e.ops[idx]
	switch c.ID & idKinds {
	case idWrite:
		rec.writeDone = true
		if rec.state == opDone {
			e.report(idx)
		}
	case idRead:
		if rec.state == opReading {
			e.onRead(idx, now)
		}
	}
	return nil
}

// behindMiss says an older request of the same partition has missed and
// is waiting to retry, or retrying (its READ in flight). A partition
// answers a client's requests in ring order, so this one cannot be ready
// before that one: its READ would be a wasted round trip.
func (e *Engine) behindMiss(idx int) bool {
	if e.missing == 0 {
		return false
	}
	slots := e.layout.Slots
	base := idx / slots * slots
	seq := e.ops[idx].seq
	for i := base; i < base+slots; i++ {
		o := &e.ops[i]
		if (o.state == opWaiting || o.state == opReading) && o.misses > 0 && int32(o.seq-seq) < 0 {
			return true
		}
	}
	return false
}

// postRead queues a READ of bytes [from, to) of slot idx's response.
func (e *Engine) postRead(idx, from, to int) {
	l := e.layout
	off := l.RespOff(idx/l.Slots, idx%l.Slots) + from
	e.pending = append(e.pending, fabric.Op{Kind: fabric.OpRead, ID: uint64(idx)<<idShift | idRead,
		Local: e.local, LocalOff: off, Len: to - from, Remote: e.grant, RemoteOff: uint64(off)})
	e.ops[idx].state = opReading
	e.ops[idx].fetched = to
	e.stats.Reads++
}

// onRead judges what a fetch READ brought: the response slot's first
// rec.fetched bytes, parsed (and checksummed) once.
func (e *Engine) onRead(idx int, now int64) {
	l := e.layout
	rec := &e.ops[idx]
	off := l.RespOff(idx/l.Slots, idx%l.Slots)
	var r Response
	last := rec.fetched
	st, need := ParseResponse(e.mem[off:off+last], rec.seq, l.MaxValue, &r)
	first := rec.firstRead
	rec.firstRead = false
	switch st {
	case SlotEmpty:
		e.stats.NotReady++
		if rec.misses == 0 {
			e.missing++
		}
		if rec.misses < 255 {
			rec.misses++
		}
		if first {
			rec.missed = true // judged when the result comes: near miss or stall?
			rec.missYield = e.yields
		}
		e.policy.OnFetch(false)
		// Retries back off per request: a server that is slow or dozing
		// must not cost a flood of READs. The first retry waits half the
		// delay, long enough that it rarely misses again.
		gap := e.delay.NS()/2 + 200
		gap <<= min(rec.reads, 7)
		if rec.reads < 255 {
			rec.reads++
		}
		rec.state, rec.due = opWaiting, now+min(gap, maxRetryGap)
		e.next = min(e.next, rec.due)
	case SlotTorn:
		e.stats.Torn++
		rec.state, rec.due = opWaiting, now
		e.next = min(e.next, now)
	case SlotShort:
		if first {
			e.delay.OnFirstRead(true, e.active == 1, rec.sent, now)
		}
		e.stats.ExtraReads++
		e.postRead(idx, last, need)
	case SlotReady:
		if first {
			e.delay.OnFirstRead(true, e.active == 1, rec.sent, now)
		} else if rec.missed {
			// Only a near miss says the delay is short. A result that took
			// far longer (a stalled or dozing server) says nothing about the
			// delay, and counting it would ratchet every later fetch late.
			// But when the driver gave its core away after the miss, the
			// retry's lateness is its own: then ready at the first retry is
			// the best evidence of a near miss there is.
			near := now-rec.sent <= 2*e.delay.NS()+nearMiss ||
				rec.misses == 1 && e.yields != rec.missYield
			if near {
				e.delay.OnFirstRead(false, e.active == 1, rec.sent, now)
			}
			rec.missed = false
		}
		if rec.misses > 0 {
			e.missing--
			e.next = min(e.next, now) // requests held behind it may fetch now
		}
		e.policy.OnFetch(true)
		e.policy.OnDone(false, now-rec.sent, now)
		if e.auto != nil && rec.op == OpGet && r.Status == StatusOK {
			e.auto.Observe(len(r.Value)) // only values teach RFS
		}
		e.finish(idx, now, r)
	}
}

// finish records a validated response and reports it once the request's
// WRITE has completed too (its slot is reused only after both).
func (e *Engine) finish(idx int, now int64, r Response) {
	rec := &e.ops[idx]
	rec.status, rec.vlen = r.Status, len(r.Value)
	rec.state = opDone
	e.bellsOnAnswer(idx/e.layout.Slots, now)
	if rec.writeDone {
		e.report(idx)
	}
}

// report hands a finished request to the driver: its value is where the
// validated response put it, not parsed again.
func (e *Engine) report(idx int) {
	l := e.layout
	rec := &e.ops[idx]
	p := idx / l.Slots
	off := l.RespOff(p, idx%l.Slots) + respHeader
	e.results = append(e.results, Result{Slot: idx, Status: rec.status, Value: e.mem[off : off+rec.vlen : off+rec.vlen]})
	rec.state = opReported
	e.inRing[p]--
	e.active--
	e.stats.Ops++
}

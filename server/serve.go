package server

import (
	"errors"

	"github.com/jakiro-kv/jakiro/kv"
	"github.com/jakiro-kv/jakiro/rfp"
)

// Serving: a peer's ready requests, each run on the partition's store and
// answered in its response ring.

// serveFrom serves up to maxPerPass ready requests of c and keeps c in the
// polled set if it had any.
func (p *partition) serveFrom(c *peer, now int64) int {
	if c.dead.Load() {
		return 0
	}
	pp := &c.parts[p.id]
	seq := c.sess.Next(p.id)
	n := c.sess.PollBatch(p.id, now, p.reqs[:])
	if n == 0 && pp.polled {
		// A busy client's next request may be in the fabric still
		// (tcp): take it on this thread.
		if pp.empty++; pp.empty%pumpEvery == 1 && c.sess.Pump() {
			n = c.sess.PollBatch(p.id, now, p.reqs[:])
		}
	}
	if n == 0 {
		// Parts of a long request and pieces of a long response are
		// answered inside the poll: their replies go out now.
		p.flushReplies(c)
		if c.sess.Next(p.id) != seq {
			p.keepPolled(c, pp, now) // more parts may be waiting
			return 1
		}
		if err := c.sess.Broken(p.id); err != nil {
			c.sess.Penalize() // a loop of such clients is paced (tcp)
			c.fail(err)       // it loses its connection, nobody else anything
		}
		return 0
	}
	pp.empty = 0
	// Start every lookup's memory loads before doing any: the misses of a
	// window of requests overlap instead of queueing.
	for i := 0; i < n; i++ {
		p.hashes[i] = kv.Hash(p.reqs[i].Key)
		p.kv.Prefetch(p.hashes[i])
	}
	if n > 1 {
		for i := 0; i < n; i++ {
			p.kv.PrefetchItem(p.hashes[i])
		}
	}
	for i := 0; i < n && !c.dead.Load(); i++ {
		if p.reqs[i].Flags&rfp.FlagRang != 0 && p.marks < maxMarks {
			p.marks++
		}
		p.serve(c, &p.reqs[i], p.hashes[i])
	}
	// The batch's replies go out together: one send on tcp.
	p.flushReplies(c)
	p.keepPolled(c, pp, now)
	return n
}

// keepPolled keeps c in the polled set: it had work at now.
func (p *partition) keepPolled(c *peer, pp *peerPart, now int64) {
	pp.lastReq = now
	if !pp.polled {
		pp.polled = true
		p.polled = append(p.polled, c)
	}
}

func statusOf(st kv.Status) rfp.Status {
	switch st {
	case kv.StatusOK:
		return rfp.StatusOK
	case kv.StatusNotFound:
		return rfp.StatusNotFound
	case kv.StatusTooLarge:
		return rfp.StatusTooLarge
	case kv.StatusNoMemory:
		return rfp.StatusNoMemory
	case kv.StatusBadKey:
		return rfp.StatusBadKey
	case kv.StatusNotStored:
		return rfp.StatusNotStored
	case kv.StatusExists:
		return rfp.StatusExists
	case kv.StatusNotNumeric:
		return rfp.StatusNotNumeric
	}
	return rfp.StatusServerError
}

// serve runs one request and publishes its response.
func (p *partition) serve(c *peer, r *rfp.Request, h uint64) {
	sess := c.sess
	val := p.val
	st, n := rfp.StatusBadRequest, 0
	switch r.Op {
	case rfp.OpGet, rfp.OpPut, rfp.OpDelete, rfp.OpGets, rfp.OpGat, rfp.OpTouch, rfp.OpStore, rfp.OpIncr:
		if len(r.Key) == 0 || len(r.Key) > kv.MaxKeyLen {
			st = rfp.StatusBadKey
			break
		}
		if p.srv.store.PartitionOf(h) != p.id {
			break // the client wrote to a ring that does not own the key
		}
		switch r.Op {
		case rfp.OpGet:
			var kst kv.Status
			n, kst = p.kv.Get(h, r.Key, val)
			st = statusOf(kst)
			if kst != kv.StatusOK {
				n = 0
			}
		case rfp.OpPut:
			st = statusOf(p.kv.Put(h, r.Key, r.Value, r.TTL))
		case rfp.OpDelete:
			st = statusOf(p.kv.Delete(h, r.Key))
		default:
			st, n = p.command(r, h, val)
		}
	case rfp.OpStats:
		st, n = rfp.StatusOK, p.statsJSON(val)
	case rfp.OpFlush:
		p.kv.Flush(r.TTL)
		st = rfp.StatusOK
	}
	p.served++
	if err := sess.Respond(p.id, r, st, val[:n]); err != nil {
		p.replyFailed(c, err)
	}
}

// flushReplies posts the reply WRITEs of c's requests answered in this
// pass (one span per client).
func (p *partition) flushReplies(c *peer) {
	n, err := c.sess.FlushReplies(p.id)
	p.replyWrites += uint64(n)
	if err != nil {
		p.replyFailed(c, err)
	}
}

func (p *partition) replyFailed(c *peer, err error) {
	p.errs++
	if errors.Is(err, rfp.ErrReplyStalled) {
		c.fail(err) // this partition must not wait on it again
	}
}

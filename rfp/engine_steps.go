package rfp

import (
	"encoding/binary"
	"fmt"

	"github.com/jakiro-kv/jakiro/fabric"
)

// nearMiss is the slack within which a late result still counts against
// the fetch delay.
const nearMiss = 2_000 // ns

// maxRetryGap caps the wait between not-ready READs of one request.
const maxRetryGap = 20_000 // ns

// servePace is about what a partition takes per request: after a fetch
// that found some of a partition's responses, the next waits this long
// per response still missing.
const servePace = 150 // ns

// Completion IDs: kind | partition << idShift.
const (
	idWrite = 1
	idRead  = 2
	idShift = 2
	idKinds = 1<<idShift - 1
)

// Tick does what is due at now: fetch READs whose delay or retry gap has
// passed, replies that landed in local memory, doorbell rings.
func (e *Engine) Tick(now int64) {
	if e.failed != nil {
		return
	}
	e.flushWrites() // a partition's WRITE goes before its READ
	next := Never
	for p := range e.parts {
		ps := &e.parts[p]
		if ps.qn == 0 || ps.reading > 0 {
			continue
		}
		if ps.reply {
			if e.take(p, now, ps.rpos+uint64(e.layout.RespRing)) == 0 || ps.qn > 0 && ps.reply {
				next = now // keep polling local memory
			}
			continue
		}
		if h := ps.head(); h.due > now {
			next = min(next, h.due)
		} else {
			e.fetch(p, now)
		}
	}
	e.next = min(next, e.tickBells(now))
}

// fetch posts the READ (two where the ring wraps) of p's responses: what
// its records in flight expect, from where the last fetch stopped.
func (e *Engine) fetch(p int, now int64) {
	l := e.layout
	ps := &e.parts[p]
	from := ps.rpos
	want := 0
	for i := 0; i < ps.qn; i++ {
		want += ps.at(i).expect
	}
	if ps.shortNeed > 0 {
		from = ps.fetchFrom
		want = max(want, ps.shortNeed) - int(from-ps.rpos)
	}
	want = min(want, l.RespRing-(int(from-ps.rpos)))
	if want <= 0 {
		want = respMarkerLen
	}
	base := l.RespBase(p)
	off := ringOff(from, l.RespRing)
	if rem := l.RespRing - off; rem < respMarkerLen && from == ps.rpos {
		// No record fits there: the server skipped it. (The rest of a
		// short record may start there: records end at the ring's end.)
		from, off = lapEnd(from, l.RespRing), 0
	}
	n1 := min(want, l.RespRing-off)
	e.read(p, base+off, n1)
	end := from + uint64(n1)
	if n1 < want {
		// The span crosses the ring's end: the rest is at its start (from
		// there, records may start a little later than expected, after a
		// wrap marker; a short fetch is completed by the next READ).
		e.read(p, base, want-n1)
		end = lapEnd(from, l.RespRing) + uint64(want-n1)
	}
	ps.fetchFrom, ps.readEnd, ps.readAt = from, end, now
}

func (e *Engine) read(p, off, n int) {
	e.pending = append(e.pending, fabric.Op{Kind: fabric.OpRead, ID: uint64(p)<<idShift | idRead,
		Local: e.local, LocalOff: off, Len: n, Remote: e.grant, RemoteOff: uint64(off)})
	e.parts[p].reading++
	e.stats.Reads++
}

// Complete takes one fabric completion. An error completion fails the
// engine (the connection is unusable after one); the error is returned.
func (e *Engine) Complete(now int64, c fabric.Completion) error {
	if e.failed != nil {
		return e.failed
	}
	if c.Err != nil {
		return e.Fail(fmt.Errorf("rfp: %v: %w", c.Kind, c.Err))
	}
	if c.ID&idKinds != idRead {
		return nil
	}
	p := int(c.ID >> idShift)
	if p >= len(e.parts) || e.parts[p].reading == 0 {
		return nil
	}
	ps := &e.parts[p]
	if ps.reading--; ps.reading > 0 {
		return nil
	}
	e.delay.OnReadTrip(now - ps.readAt)
	e.onRead(p, now)
	return nil
}

// onRead takes what p's fetch brought and judges the oldest response
// still missing.
func (e *Engine) onRead(p int, now int64) {
	ps := &e.parts[p]
	qn := ps.qn
	var h *rec
	if qn > 0 {
		h = ps.head()
	}
	hFirst := h != nil && h.misses == 0 && !h.missed
	took := e.take(p, now, ps.readEnd)
	if ps.qn == 0 {
		return
	}
	h = ps.head()
	if ps.shortNeed > 0 {
		e.stats.ExtraReads++
		h.due = now // the rest of it, at once
		e.next = min(e.next, now)
		return
	}
	if h.due > ps.readAt {
		// Covered before it fell due: not a miss, its time comes.
		e.next = min(e.next, h.due)
		return
	}
	e.stats.NotReady++
	e.policy.OnFetch(false)
	if took == 0 && hFirst && h.misses == 0 {
		h.missed = true // judged when the result comes: near miss or stall?
		h.missYield = e.yields
	}
	if h.misses < 255 {
		h.misses++
	}
	// Retries back off per request: a server that is slow or dozing must
	// not cost a flood of READs. The first retry waits half the delay,
	// long enough that it rarely misses again.
	gap := e.delay.NS()/2 + 200
	gap <<= min(h.reads, 7)
	if e.cfg.CopyReads && ps.qn == 1 {
		// A request alone: a READ again costs a copy, look at every
		// step. Several in flight are answered one after another: the
		// pace below spares the driver READs that find nothing.
		gap = 0
	}
	if h.reads < 255 {
		h.reads++
	}
	if took > 0 {
		// The partition is answering these right now, one after another:
		// the rest come at its pace, not after a miss's backoff.
		gap = min(gap, int64(ps.qn)*servePace)
	}
	h.due = now + min(gap, maxRetryGap)
	e.next = min(e.next, h.due)
}

// take parses p's responses from the oldest in flight up to position end
// of what local memory holds (fetched, or written by the server's
// replies), finishing every record whose response is complete and
// valid. It returns how many it finished.
func (e *Engine) take(p int, now int64, end uint64) int {
	l := e.layout
	ps := &e.parts[p]
	base := l.RespBase(p)
	took := 0
	ps.shortNeed = 0
	for ps.qn > 0 {
		pos := ps.rpos
		off := ringOff(pos, l.RespRing)
		rem := l.RespRing - off
		if rem < respMarkerLen {
			ps.rpos = lapEnd(pos, l.RespRing)
			continue
		}
		if end <= pos {
			ps.shortNeed, ps.fetchFrom = respMarkerLen, pos
			break
		}
		avail := min(rem, int(end-pos))
		h := ps.head()
		var r Response
		st, need := ParseResponse(e.mem[base+off:base+off+avail], h.seq, h.maxLen, &r)
		switch st {
		case SlotWrap:
			ps.rpos = lapEnd(pos, l.RespRing)
			continue
		case SlotReady:
			ps.rpos = pos + uint64(r.Len)
			e.finish(p, now, r)
			took++
			continue
		case SlotShort:
			if need > rem {
				// Records never cross the ring's end: this length is
				// not the server's (yet); read the record again whole.
				e.stats.Torn++
				h.due = now
			} else if !h.reply {
				ps.shortNeed, ps.fetchFrom = need, pos+uint64(avail)
			}
		case SlotTorn:
			e.stats.Torn++
			h.due = now
		}
		break
	}
	if took > 0 {
		e.askPiece(now, p)
		if ps.long >= 0 {
			e.sendParts(now, p)
		}
	}
	return took
}

// finish takes the valid response r of p's oldest record.
func (e *Engine) finish(p int, now int64, r Response) {
	ps := &e.parts[p]
	h := *ps.head()
	ps.pop()
	e.bellsOnAnswer(p, now)
	if h.reply {
		e.stats.Replied++
	} else if h.kind == recCall {
		e.policy.OnFetch(true)
		e.judgeDelay(&h, now)
	}
	switch h.kind {
	case recPart:
		ps.resv -= h.resv
		return
	case recPiece:
		ps.resv -= h.resv
		ps.piecesOut--
		e.gather(p, now, r.Value, r.Flags&respMore == 0)
		return
	}
	c := &e.calls[h.call]
	c.status, c.resv = r.Status, h.resv
	if r.Flags&respFirst != 0 {
		// A long value: its first piece is here, with its length; the
		// rest comes in pieces, oldest long value first.
		v := r.Value
		total := 0
		if len(v) >= 8 {
			total = int(binary.LittleEndian.Uint64(v))
			v = v[8:]
		}
		if total > MaxValueLen+MetaLen || total < len(v) {
			e.Fail(fmt.Errorf("rfp: server sent a long value of %d bytes", total))
			return
		}
		c.asm = append(c.asm[:0], v...)
		c.want = total
		ps.resv -= c.resv // its ring bytes are copied
		c.resv = 0
		ps.asmQ = append(ps.asmQ, h.call)
		return
	}
	c.val = r.Value
	if !h.reply {
		if e.auto != nil && c.op == OpGet && r.Status == StatusOK {
			e.auto.Observe(len(r.Value)) // only values teach RFS
		}
	}
	e.policy.OnDone(h.reply, now-c.sent, now)
	e.report(int(h.call), p)
}

// judgeDelay feeds the fetch delay what the fetch of record h says.
func (e *Engine) judgeDelay(h *rec, now int64) {
	alone := e.active == 1
	switch {
	case h.misses == 0:
		e.delay.OnFirstRead(true, alone, h.sent, now)
	case h.missed:
		// Only a near miss says the delay is short. A result that took
		// far longer (a stalled or dozing server) says nothing about the
		// delay, and counting it would ratchet every later fetch late.
		// But when the driver gave its core away after the miss, the
		// retry's lateness is its own: then ready at the first retry is
		// the best evidence of a near miss there is.
		if now-h.sent <= 2*e.delay.NS()+nearMiss || h.misses == 1 && e.yields != h.missYield {
			e.delay.OnFirstRead(false, alone, h.sent, now)
		}
	}
}

// gather adds a piece to p's oldest long value, reporting it when whole.
func (e *Engine) gather(p int, now int64, piece []byte, last bool) {
	ps := &e.parts[p]
	if len(ps.asmQ) == 0 {
		return
	}
	ci := ps.asmQ[0]
	c := &e.calls[ci]
	if len(c.asm)+len(piece) > c.want || last && len(c.asm)+len(piece) != c.want {
		e.Fail(fmt.Errorf("rfp: long value of %d bytes came in pieces of another length", c.want))
		return
	}
	c.asm = append(c.asm, piece...)
	if !last {
		return
	}
	ps.asmQ = ps.asmQ[1:]
	c.val = c.asm
	e.policy.OnDone(false, now-c.sent, now)
	e.report(int(ci), p)
}

// report hands a finished call to the driver.
func (e *Engine) report(ci, p int) {
	c := &e.calls[ci]
	e.results = append(e.results, Result{Slot: ci, Status: c.status, Value: c.val[:len(c.val):len(c.val)]})
	e.parts[p].calls--
	e.active--
	e.stats.Ops++
}

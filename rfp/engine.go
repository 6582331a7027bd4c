package rfp

import (
	"errors"
	"fmt"
	"math"

	"github.com/jakiro-kv/jakiro/fabric"
)

// EngineConfig tunes the client side of the protocol.
type EngineConfig struct {
	Mode Mode
	// RFS is the remote fetch size in bytes per response record; 0 means
	// auto (AutoRFS).
	RFS int
	// FetchDelayNS is the wait before the first fetch READ; negative means
	// adaptive (FetchDelay).
	FetchDelayNS int64
	// HybridR is the not-ready streak that switches hybrid mode to replies.
	HybridR int
	// Window bounds outstanding requests per partition (default and
	// maximum: the layout's Slots).
	Window int
	// Bells says the driver can ring the server partitions' doorbells
	// (fabric.Ringer); without them the engine asks for no rings.
	Bells bool
	// QuietRingNS is the doorbell contract's QuietRing for this
	// connection's fabric (QuietRingOf); 0 means QuietRing.
	QuietRingNS int64
	// Blocked, where the fabric shows it (fabric.BellWatcher), reports
	// whether partition p is blocked on its doorbell: a request to it
	// then rings, marked, however recent the last one was. The ring is
	// not needed for the request to be found (rfp/bells.go), only to be
	// found at once by a partition dozing on a crowded host.
	Blocked func(p int) bool
	// SoftNIC: the fabric's NIC is a host thread (tcp), so ModeAuto
	// starts with replies.
	SoftNIC bool
	// CopyReads: a READ is a copy from mapped memory (shm,
	// fabric.CopyReader), not a NIC operation or a message. Latency is
	// then all a READ costs: the first READ goes at once (unless
	// FetchDelayNS fixes a delay) and a miss is READ again at the next
	// step, with no backoff.
	CopyReads bool
}

// Result is one finished request. Value aliases the engine's memory and
// stays valid until Consumed.
type Result struct {
	Slot   int
	Status Status
	Value  []byte
}

// ErrRingFull: no room in the partition's rings; drive the engine first.
var ErrRingFull = errors.New("rfp: ring full")

// Never is what Next returns when the engine waits for nothing but
// completions.
const Never = int64(math.MaxInt64)

// Engine is the client side of the protocol over one connection, as a pure
// state machine: it never touches the fabric or the clock. Steps go in
// (Submit, Complete, Tick, each with the driver's clock in nanoseconds);
// what to do comes out (Pending ops to post, Rings to ring after posting
// them, Results to hand to callers, Next: when Tick has work). It reads and
// writes its local region's bytes, which is memory, not I/O: requests are
// encoded there before their WRITE, READs and server replies land there.
//
// Per partition, the requests submitted since the last Pending go out in
// one WRITE (two where the ring wraps), and one READ (two where it wraps)
// fetches the responses of every request in flight: a partition answers
// in ring order, so what is ready comes back together.
// Not safe for concurrent use.
type Engine struct {
	local  *fabric.Region
	mem    []byte
	grant  fabric.Desc
	layout Layout
	cfg    EngineConfig
	policy ReplyPolicy
	auto   *AutoRFS // nil when the RFS is fixed
	delay  FetchDelay
	parts  []partState
	calls  []callRec // partition*Slots + i: the callers' requests (Result.Slot)
	active int       // calls in flight
	yields uint32    // times the driver gave its core away while waiting
	next   int64     // no Tick work before this time
	dirty  []int     // partitions with records not yet in Pending
	// pending are the ops to post; writes are built from dirty when
	// Pending is asked for.
	pending []fabric.Op
	results []Result
	bells   bellState
	stats   Counters
	failed  error
	// The layout's reservations, worked out once (they divide).
	callResv, callBudget, pieceResv, pieceBudget, maxReqRec int
}

type recKind uint8

const (
	recCall  recKind = iota // a caller's request (or the join of a long one)
	recPart                 // a part of a long request's value
	recPiece                // asks for the next piece of a long response
)

// rec is a request record in flight, oldest first per partition.
type rec struct {
	seq       uint32
	kind      recKind
	reply     bool
	missed    bool // the first READ that covered it, due, found nothing
	reads     uint8
	misses    uint8
	call      int32  // the call it serves
	missYield uint32 // yields at the first miss
	start     uint64 // its request ring position (wrap skip excluded)
	resv      int    // response bytes reserved
	maxLen    int    // the longest payload its response may carry
	expect    int    // response bytes a fetch expects
	sent      int64
	due       int64 // when the next fetch READ may go (it leads the partition's queue)
}

// callRec is a caller's request from Submit to Consumed.
type callRec struct {
	busy   bool
	op     Op
	status Status
	resv   int    // response bytes held until Consumed
	val    []byte // the result, once in
	asm    []byte // a long response's pieces, gathered
	want   int    // its total length
	sent   int64
}

// NewEngine builds the client side for a connection whose server sent w
// and whose control block already points at local, a region of at least
// w.Layout.Size() bytes in the connection's domain.
func NewEngine(local *fabric.Region, w Welcome, cfg EngineConfig) (*Engine, error) {
	l := w.Layout
	if local.Len() < l.Size() {
		return nil, fmt.Errorf("rfp: local region %d bytes, layout needs %d", local.Len(), l.Size())
	}
	if cfg.Window <= 0 || cfg.Window > l.Slots {
		cfg.Window = l.Slots
	}
	if cfg.RFS != 0 && (cfg.RFS < MinRFS || cfg.RFS > l.callResv()) {
		return nil, fmt.Errorf("rfp: RFS %d outside %d..%d", cfg.RFS, MinRFS, l.callResv())
	}
	e := &Engine{
		local: local, mem: local.Bytes(), grant: w.Grant, layout: l, cfg: cfg,
		policy:  cfg.Mode.Policy(cfg.HybridR, cfg.SoftNIC),
		delay:   NewFetchDelay(fetchDelayFor(cfg)),
		parts:   make([]partState, l.Partitions),
		calls:   make([]callRec, l.Partitions*l.Slots),
		dirty:   make([]int, 0, l.Partitions),
		pending: make([]fabric.Op, 0, 4*l.Partitions),
		results: make([]Result, 0, l.Partitions*l.Slots),
		next:    Never,
		bells:   newBellState(l.Partitions, cfg.Bells, cfg.QuietRingNS, cfg.Blocked),
	}
	e.callResv, e.callBudget, e.maxReqRec = l.callResv(), l.CallBudget(), l.maxReqRecord()
	e.pieceResv, e.pieceBudget = l.pieceResv(), l.pieceBudget()
	for p := range e.parts {
		e.parts[p].init(p, l)
	}
	if cfg.RFS == 0 {
		e.auto = NewAutoRFS(RFSFor(32), l.callResv())
	}
	return e, nil
}

// fetchDelayFor is the FetchDelay setting cfg asks for: adaptive where
// a READ costs a round trip, none where it is a copy (CopyReads).
func fetchDelayFor(cfg EngineConfig) int64 {
	if cfg.CopyReads && cfg.FetchDelayNS < 0 {
		return 0
	}
	return cfg.FetchDelayNS
}

// Layout is the connection's geometry.
func (e *Engine) Layout() Layout { return e.layout }

// Counters are the totals so far.
func (e *Engine) Counters() Counters { return e.stats }

// RFS is the fetch size per response in use now.
func (e *Engine) RFS() int {
	if e.auto != nil {
		return e.auto.RFS()
	}
	return e.cfg.RFS
}

// FetchDelayNS is the current wait before a first fetch.
func (e *Engine) FetchDelayNS() int64 { return e.delay.NS() }

// Active is the number of requests in flight.
func (e *Engine) Active() int { return e.active }

// Err is the failure that stopped the engine, if any.
func (e *Engine) Err() error { return e.failed }

// Fail stops the engine: the driver lost the connection (a Post or Poll
// failed). Every request in flight is lost with it.
func (e *Engine) Fail(err error) error {
	if e.failed == nil {
		e.failed = err
	}
	return e.failed
}

// Yielded tells the engine that its driver gave the core to other work
// while waiting (more waiters than cores), so a retry's lateness after a
// miss is the driver's, not the server's.
func (e *Engine) Yielded() { e.yields++ }

// Free says whether partition p can take another request now: Submit of
// any request that fits the server's limits then succeeds.
func (e *Engine) Free(p int) bool {
	ps := &e.parts[p]
	return e.failed == nil && ps.calls < e.cfg.Window && len(ps.freeCalls) > 0 && ps.long < 0 &&
		ps.reqRoom(e.layout, e.maxReqRec) && ps.respRoom(e.layout, e.callResv, e.pieceResv) &&
		ps.qn < len(ps.q) && ps.modeOK(e.policy.Reply())
}

// Submit encodes a request for partition p into its request ring; the
// WRITE that sends it (with the others submitted since) is in the next
// Pending. now is the driver's clock. It returns the Result.Slot the
// result will carry. The caller validates sizes against the layout;
// Submit rejects what cannot fit.
func (e *Engine) Submit(now int64, p int, op Op, key, value []byte, ttl uint32) (int, error) {
	if e.failed != nil {
		return -1, e.failed
	}
	if p < 0 || p >= e.layout.Partitions {
		return -1, fmt.Errorf("rfp: partition %d outside 0..%d", p, e.layout.Partitions-1)
	}
	if len(key) > MaxKeyLen || len(value) > e.layout.MaxValue {
		return -1, fmt.Errorf("rfp: key %d B / value %d B exceed %d / %d", len(key), len(value), MaxKeyLen, e.layout.MaxValue)
	}
	if !e.Free(p) {
		return -1, ErrRingFull
	}
	ps := &e.parts[p]
	ci := ps.freeCalls[len(ps.freeCalls)-1]
	ps.freeCalls = ps.freeCalls[:len(ps.freeCalls)-1]
	ps.calls++
	e.active++
	c := &e.calls[ci]
	// Field by field: the literal cleared all 80 bytes and copied them
	// in, for a few fields.
	c.busy, c.op, c.status, c.resv, c.want, c.sent = true, op, 0, 0, 0, now
	c.val, c.asm = nil, c.asm[:0]
	if reqRecLen(len(key), len(value)) > e.maxReqRec {
		// Too long for one record: its value goes in parts, then the
		// key with the last part (partState.sendParts).
		ps.long, ps.longOp, ps.longTTL = ci, op, ttl
		ps.longKey = append(ps.longKey[:0], key...)
		ps.longVal = append(ps.longVal[:0], value...)
		ps.longSent = 0
		e.sendParts(now, p)
		return int(ci), nil
	}
	e.put(now, p, recCall, ci, ReqHeader{Op: op, TTL: ttl}, key, value)
	return int(ci), nil
}

// put places a record at p's request ring and queues it. The caller made
// sure there is room (Free, or the checks of sendParts and askPiece).
func (e *Engine) put(now int64, p int, kind recKind, call int32, h ReqHeader, key, value []byte) {
	l := e.layout
	ps := &e.parts[p]
	// Made in its place in the queue rather than passed in and copied
	// there (72 bytes, twice); queued once qn counts it, at the end.
	r := ps.tail()
	*r = rec{kind: kind, call: call}
	switch r.kind {
	case recCall:
		r.resv, r.maxLen, r.expect = e.callResv, e.callBudget, e.expectFor(h.Op)
	case recPart:
		r.resv, r.maxLen, r.expect = respMarkerLen, 0, respMarkerLen
	case recPiece:
		r.resv, r.maxLen = e.pieceResv, e.pieceBudget
		r.expect = r.resv
	}
	h.Budget = uint32(r.maxLen)
	r.seq = ps.nextSeq
	ps.nextSeq++
	// A partition's records in flight share one mode (modeOK): parts and
	// pieces of a long value keep the mode of the records before them.
	r.reply = e.policy.Reply()
	if !ps.modeOK(r.reply) {
		r.reply = ps.reply
	}
	ps.reply = r.reply
	if r.reply {
		h.Flags |= FlagReply
		e.next = min(e.next, now)
	}
	if e.bellsOnSubmit(p, now) {
		h.Flags |= FlagRang
	}
	h.Seq = r.seq
	n := reqRecLen(len(key), len(value))
	off := ringOff(ps.wpos, l.ReqRing)
	base := l.ReqBase(p)
	if rem := l.ReqRing - off; n > rem {
		if rem >= reqMarkerLen {
			putReqWrap(e.mem[base+off:], r.seq)
		}
		ps.wpos += uint64(rem)
		off = 0
	}
	r.start = ps.wpos
	PutRequest(e.mem[base+off:base+off+n], h, key, value)
	ps.wpos += uint64(n)
	if rem := l.ReqRing - off - n; rem < n {
		// The lap's rest cannot take another record this long: wrap now,
		// so that the marker goes out in this record's WRITE rather than
		// in one of its own before the next record's.
		if rem >= reqMarkerLen {
			putReqWrap(e.mem[base+off+n:], ps.nextSeq)
		}
		ps.wpos += uint64(rem)
	}
	r.sent = now
	r.due = now + e.delay.NS()
	ps.resv += r.resv
	ps.qn++
	if !ps.dirty {
		ps.dirty = true
		e.dirty = append(e.dirty, p)
	}
	if !r.reply && ps.qn == 1 {
		e.next = min(e.next, r.due)
	}
}

// expectFor is the response bytes a fetch expects for op.
func (e *Engine) expectFor(op Op) int {
	switch op {
	case OpGet, OpStats:
		return e.RFS()
	case OpGets, OpGat:
		return align(e.RFS()+MetaLen, recAlign)
	case OpTouch:
		return respRecLen(MetaLen)
	case OpStore:
		return respRecLen(8)
	case OpIncr:
		return respRecLen(IncrResultLen)
	}
	return respMarkerLen
}

// sendParts puts as many parts of p's long request as there is room for,
// and its join once only the last part is left.
func (e *Engine) sendParts(now int64, p int) {
	ps := &e.parts[p]
	l := e.layout
	maxRec := e.maxReqRec
	for ps.long >= 0 {
		left := len(ps.longVal) - ps.longSent
		total := uint32(len(ps.longVal))
		if reqRecLen(len(ps.longKey), left) <= maxRec {
			if !ps.reqRoom(l, maxRec) || !ps.respRoom(l, e.callResv, e.pieceResv) || ps.qn == len(ps.q) {
				return
			}
			e.put(now, p, recCall, ps.long,
				ReqHeader{Op: ps.longOp, TTL: ps.longTTL, Flags: FlagJoin, Total: total}, ps.longKey, ps.longVal[ps.longSent:])
			ps.long = -1
			return
		}
		if !ps.reqRoom(l, maxRec) || !ps.respRoom(l, respMarkerLen, e.pieceResv) || ps.qn == len(ps.q) {
			return
		}
		// A part as long as a record holds, or the rest of the value
		// when only the key keeps it from going with the join (which
		// then carries the key alone).
		n := min(maxRec-reqHeader-sumSize-recAlign, left)
		e.put(now, p, recPart, ps.long,
			ReqHeader{Op: ps.longOp, Flags: FlagPart, Total: total}, nil, ps.longVal[ps.longSent:ps.longSent+n])
		ps.longSent += n
	}
}

// askPiece puts piece requests for p's long responses, oldest first: as
// many as the pieces still missing need, up to maxPiecesOut in flight
// where the response ring has room for them. A partition sends the
// pieces of its oldest long response in order, each at most the piece
// budget, so the engine knows how many each response still needs.
func (e *Engine) askPiece(now int64, p int) {
	ps := &e.parts[p]
	l := e.layout
	for ps.piecesOut < maxPiecesOut && ps.piecesOut < e.piecesMissing(ps, e.pieceBudget) &&
		ps.reqRoom(l, reqMarkerLen) && ps.respRoom(l, e.pieceResv, e.pieceResv) && ps.qn < len(ps.q) {
		ps.piecesOut++
		e.put(now, p, recPiece, ps.asmQ[0], ReqHeader{Op: opPiece}, nil, nil)
	}
}

// maxPiecesOut bounds a partition's piece requests in flight.
const maxPiecesOut = 3

// piecesMissing is how many pieces p's long responses still need.
func (e *Engine) piecesMissing(ps *partState, budget int) int {
	n := 0
	for _, ci := range ps.asmQ {
		c := &e.calls[ci]
		n += (c.want - len(c.asm) + budget - 1) / budget
	}
	return n
}

// Pending are the operations to post now, in order, in one Post; then
// Posted. The slice is the engine's: it is reused after Posted.
func (e *Engine) Pending() []fabric.Op {
	e.flushWrites()
	return e.pending
}

// flushWrites adds the WRITEs of the records put since the last call: per
// partition one WRITE of the span, two where it crosses the ring's end.
func (e *Engine) flushWrites() {
	if len(e.dirty) > 0 { // inlined: a driver's every pass asks, twice
		e.flushDirty()
	}
}

func (e *Engine) flushDirty() {
	l := e.layout
	for _, p := range e.dirty {
		ps := &e.parts[p]
		ps.dirty = false
		from, to := ps.sentTo, ps.wpos
		base := l.ReqBase(p)
		for from < to {
			off := ringOff(from, l.ReqRing)
			n := min(int(to-from), l.ReqRing-off)
			e.pending = append(e.pending, fabric.Op{Kind: fabric.OpWrite, ID: idWrite,
				Local: e.local, LocalOff: base + off, Len: n, Remote: e.grant, RemoteOff: uint64(base + off)})
			e.stats.Writes++
			from += uint64(n)
		}
		ps.sentTo = to
	}
	e.dirty = e.dirty[:0]
}

// Queue adds op ahead of what the next Pending returns: a Link's control
// block WRITE (Link.Control), which must land before the first request and
// goes out with it. Its completion, a WRITE's, is one the engine ignores.
func (e *Engine) Queue(op fabric.Op) { e.pending = append(e.pending, op) }

// Posted says the driver posted every operation Pending returned.
func (e *Engine) Posted() { e.pending = e.pending[:0] }

// Rings are the partitions whose doorbells to ring, after posting Pending
// (a ring must not overtake the request it announces); then Rang.
func (e *Engine) Rings() []int { return e.bells.rings }

// Rang says the driver rang every partition Rings returned.
func (e *Engine) Rang() { e.bells.rang() }

// Results are the requests finished since the last Consumed, each once.
// Their Values alias the engine's memory: copy them before Consumed, which
// frees their room for new requests. Call Consumed before posting the next
// Pending: records put after a result was reported (parts, pieces, new
// requests) reserve response room as if its bytes were free, so once
// posted their responses may land on them.
func (e *Engine) Results() []Result { return e.results }

// Consumed frees the room of every Result returned so far.
func (e *Engine) Consumed() {
	slots := e.layout.Slots
	for _, r := range e.results {
		c := &e.calls[r.Slot]
		ps := &e.parts[r.Slot/slots]
		ps.resv -= c.resv
		c.busy, c.resv, c.val = false, 0, nil
		ps.freeCalls = append(ps.freeCalls, int32(r.Slot))
	}
	e.results = e.results[:0]
}

// Next is the earliest time at which Tick has work (a fetch READ or a
// doorbell ring falls due, or a reply is awaited in local memory); Never
// when the engine waits only for completions. A driver may skip Tick
// before then, and may sleep until then when nothing is posted.
func (e *Engine) Next() int64 { return e.next }

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
	// RFS is the remote fetch size in bytes; 0 means auto (AutoRFS).
	RFS int
	// FetchDelayNS is the wait before the first fetch READ; negative means
	// adaptive (FetchDelay).
	FetchDelayNS int64
	// HybridR is the not-ready streak that switches hybrid mode to replies.
	HybridR int
	// Window bounds outstanding requests per partition (default and
	// maximum: the layout's slots).
	Window int
	// Bells says the driver can ring the server partitions' doorbells
	// (fabric.Ringer); without them the engine asks for no rings.
	Bells bool
	// QuietRingNS is the doorbell contract's QuietRing for this
	// connection's fabric (QuietRingOf); 0 means QuietRing.
	QuietRingNS int64
	// SoftNIC: the fabric's NIC is a host thread (tcp), so ModeAuto
	// starts with replies.
	SoftNIC bool
}

// Result is one finished request. Value aliases the engine's local region
// and stays valid until Consumed.
type Result struct {
	Slot   int
	Status Status
	Value  []byte
}

// ErrRingFull: no free slot in the partition's ring; drive the engine first.
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
// Not safe for concurrent use.
type Engine struct {
	local   *fabric.Region
	mem     []byte
	grant   fabric.Desc
	layout  Layout
	cfg     EngineConfig
	policy  ReplyPolicy
	auto    *AutoRFS // nil when the RFS is fixed
	delay   FetchDelay
	nextSeq []uint32 // per partition
	inRing  []int    // per partition: requests in flight
	ops     []opRec  // partition*slots + slot
	active  int      // requests in flight
	missing int      // requests that missed and have not finished: behindMiss looks only then
	yields  uint32   // times the driver gave its core away while waiting
	next    int64    // no Tick work before this time
	pending []fabric.Op
	results []Result
	bells   bellState
	stats   Counters
	failed  error
}

type opState uint8

const (
	opIdle      opState = iota
	opWaiting           // sent; fetch READ due at due
	opReading           // fetch READ posted
	opReplyWait         // sent with FlagReply; polling local memory
	opDone              // result in, waiting for the request WRITE's completion
	opReported          // in Results until Consumed
)

// opRec is one ring slot's request.
type opRec struct {
	state     opState
	writeDone bool
	firstRead bool // no fetch READ completed yet
	missed    bool // the first fetch READ found no result
	op        Op
	status    Status // the result's, once in
	reads     uint8  // READs since the last ring: the retry backoff exponent
	misses    uint8  // not-ready READs in all
	missYield uint32 // yields at the first miss
	seq       uint32
	vlen      int   // the result's value length, once in (value at respHeader)
	fetched   int   // bytes of the response slot the last READ brought
	sent      int64 // when submitted
	due       int64 // when the next fetch READ may go
}

// Completion ID layout: slot index << idShift | kind.
const (
	idWrite = 1
	idRead  = 2
	idShift = 2
	idKinds = 1<<idShift - 1
)

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
	if cfg.RFS != 0 && (cfg.RFS < MinRFS || cfg.RFS > l.RespSlot) {
		return nil, fmt.Errorf("rfp: RFS %d outside %d..%d", cfg.RFS, MinRFS, l.RespSlot)
	}
	e := &Engine{
		local: local, mem: local.Bytes(), grant: w.Grant, layout: l, cfg: cfg,
		policy:  cfg.Mode.Policy(cfg.HybridR, cfg.SoftNIC),
		delay:   NewFetchDelay(cfg.FetchDelayNS),
		nextSeq: make([]uint32, l.Partitions),
		inRing:  make([]int, l.Partitions),
		ops:     make([]opRec, l.Partitions*l.Slots),
		pending: make([]fabric.Op, 0, 2*l.Partitions*l.Slots),
		results: make([]Result, 0, l.Partitions*l.Slots),
		next:    Never,
		bells:   newBellState(l.Partitions, cfg.Bells, cfg.QuietRingNS),
	}
	for p := range e.nextSeq {
		e.nextSeq[p] = 1 // zeroed slots hold sequence 0
	}
	if cfg.RFS == 0 {
		e.auto = NewAutoRFS(RFSFor(32), l.RespSlot)
	}
	return e, nil
}

// Layout is the connection's geometry.
func (e *Engine) Layout() Layout { return e.layout }

// Counters are the totals so far.
func (e *Engine) Counters() Counters { return e.stats }

// RFS is the fetch size in use now.
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

// Free says whether partition p can take another request now.
func (e *Engine) Free(p int) bool {
	return e.inRing[p] < e.cfg.Window &&
		e.ops[p*e.layout.Slots+SlotOf(e.nextSeq[p], e.layout.Slots)].state == opIdle
}

// Submit encodes a request for partition p into its next request slot and
// queues the WRITE that sends it; now is the driver's clock. It returns the
// slot index that the Result will carry. The caller validates sizes
// against the layout; Submit rejects what cannot fit.
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
	l := e.layout
	seq := e.nextSeq[p]
	s := SlotOf(seq, l.Slots)
	idx := p*l.Slots + s
	e.nextSeq[p]++
	e.inRing[p]++
	e.active++
	var flags uint8
	if e.policy.Reply() {
		flags = FlagReply
	}
	if e.bellsOnSubmit(p, now) {
		flags |= FlagRang
	}
	off := l.ReqOff(p, s)
	n := PutRequest(e.mem[off:off+l.ReqSlot], seq, op, flags, key, value, ttl)
	rec := &e.ops[idx]
	*rec = opRec{seq: seq, op: op, firstRead: true, state: opWaiting, sent: now, due: now + e.delay.NS()}
	if flags&FlagReply != 0 {
		PoisonResponse(e.mem[l.RespOff(p, s):], seq)
		rec.state = opReplyWait
		e.next = min(e.next, now)
	} else {
		e.next = min(e.next, rec.due)
	}
	e.pending = append(e.pending, fabric.Op{Kind: fabric.OpWrite, ID: uint64(idx)<<idShift | idWrite,
		Local: e.local, LocalOff: off, Len: n, Remote: e.grant, RemoteOff: uint64(off)})
	e.stats.Writes++
	return idx, nil
}

// Pending are the operations to post now, in order, in one Post; then
// Posted. The slice is the engine's: it is reused after Posted.
func (e *Engine) Pending() []fabric.Op { return e.pending }

// Posted says the driver posted every operation Pending returned.
func (e *Engine) Posted() { e.pending = e.pending[:0] }

// Rings are the partitions whose doorbells to ring, after posting Pending
// (a ring must not overtake the request it announces); then Rang.
func (e *Engine) Rings() []int { return e.bells.rings }

// Rang says the driver rang every partition Rings returned.
func (e *Engine) Rang() { e.bells.rang() }

// Results are the requests finished since the last Consumed, each once.
// Their Values alias the local region: copy them before Consumed, which
// frees their slots for new requests.
func (e *Engine) Results() []Result { return e.results }

// Consumed frees the slots of every Result returned so far.
func (e *Engine) Consumed() {
	for _, r := range e.results {
		e.ops[r.Slot].state = opIdle
	}
	e.results = e.results[:0]
}

// Next is the earliest time at which Tick has work (a fetch READ or a
// doorbell ring falls due, or a reply is awaited in local memory); Never
// when the engine waits only for completions. A driver may skip Tick
// before then, and may sleep until then when nothing is posted.
func (e *Engine) Next() int64 { return e.next }

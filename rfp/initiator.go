package rfp

import (
	"errors"
	"fmt"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// InitiatorConfig tunes the client side of the protocol.
type InitiatorConfig struct {
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
}

// Result is one finished request. Value aliases the initiator's local
// region and stays valid until the slot is submitted again.
type Result struct {
	Slot   int
	Status Status
	Value  []byte
}

type opState uint8

const (
	opIdle      opState = iota
	opWaiting           // sent; fetch READ due at op.due
	opReading           // fetch READ posted
	opReplyWait         // sent with FlagReply; polling local memory
	opDone              // result ready, to be reported
)

type opRec struct {
	state     opState
	writeDone bool
	firstRead bool // no fetch READ completed yet
	missed    bool // the first fetch READ found no result
	reads     uint8
	misses    uint8  // not-ready READs in all
	missYield uint32 // in.yields at the first miss
	op        Op
	seq       uint32
	sent      int64 // when submitted
	due       int64
	fetched   int // bytes of the response slot the last READ brought
}

// Completion ID layout: slot index << 2 | kind.
const (
	idWrite = 1
	idRead  = 2
)

// nearMiss is the slack within which a late result still counts against
// the fetch delay.
const nearMiss = 2_000 // ns

// maxRetryGap caps the wait between not-ready READs of one request.
const maxRetryGap = 20_000 // ns

// ErrRingFull: no free slot in the partition's ring; Progress first.
var ErrRingFull = errors.New("rfp: ring full")

// Initiator drives requests over one fabric connection: it encodes and
// WRITEs requests, fetches results, retries, and reports results. Not safe
// for concurrent use; the client package serialises it.
type Initiator struct {
	conn    fabric.Conn
	local   *fabric.Region
	mem     []byte
	grant   fabric.Desc
	layout  Layout
	cfg     InitiatorConfig
	nextSeq []uint32 // per partition
	inRing  []int    // outstanding per partition
	ops     []opRec  // partition*slots + slot
	active  int      // ops not idle
	pending []fabric.Op
	comps   []fabric.Completion
	auto    *AutoRFS
	hybrid  *Hybrid
	delay   FetchDelay
	epoch   time.Time
	clock   int64  // now() as of the last Progress
	yields  uint32 // times the caller gave its core away while waiting
	missing int    // requests that missed and have not finished: behindMiss looks only then
	stats   Counters
	failed  error
	ringer  fabric.Ringer // nil when the fabric has no doorbells
	rungAt  []int64       // per partition: last doorbell ring
	postAt  []int64       // per partition: last request WRITE posted
	wake    []int         // partitions to ring once the pending WRITEs are posted
}

// QuietRing: a request to a partition this client has not written to for
// this long rings its doorbell right after the WRITE, without waiting for
// RingAfter: the partition has likely stopped spinning (the server spins
// 200µs by default) and waking it is the whole latency.
const QuietRing = 100_000 // ns

// RingAfter is how long a request may go unanswered before the client
// rings its partition's doorbell, in case the partition dozes: long enough
// that a busy server never sees rings, short enough to bound the wake-up
// latency of an idle one.
const RingAfter = 10_000 // ns

// maybeRing rings partition p's doorbell when a request has waited
// RingAfter and nobody rang it since.
func (in *Initiator) maybeRing(p int, rec *opRec, now int64) {
	if in.ringer == nil || now-rec.sent < RingAfter || now-in.rungAt[p] < RingAfter {
		return
	}
	in.rungAt[p] = now
	in.stats.Rings++
	in.ringer.RingBell(p)
	rec.reads = 0 // the partition is waking: fetch again soon, not after a backed-off gap
}

// NewInitiator sets up the client side on an established connection whose
// peer sent w; local must be a region of at least w.Layout.Size() bytes in
// the connection's domain. It WRITEs the control block (the local region's
// descriptor) into the grant.
func NewInitiator(conn fabric.Conn, local *fabric.Region, w Welcome, cfg InitiatorConfig) (*Initiator, error) {
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
	in := &Initiator{
		conn: conn, local: local, mem: local.Bytes(), grant: w.Grant, layout: l, cfg: cfg,
		nextSeq: make([]uint32, l.Partitions),
		inRing:  make([]int, l.Partitions),
		ops:     make([]opRec, l.Partitions*l.Slots),
		pending: make([]fabric.Op, 0, 2*l.Partitions*l.Slots),
		comps:   make([]fabric.Completion, 64),
		hybrid:  NewHybrid(cfg.HybridR, 0),
		rungAt:  make([]int64, l.Partitions),
		postAt:  make([]int64, l.Partitions),
		delay:   NewFetchDelay(cfg.FetchDelayNS),
		epoch:   time.Now(),
	}
	for p := range in.nextSeq {
		in.nextSeq[p] = 1 // zeroed slots hold sequence 0
	}
	in.ringer, _ = conn.(fabric.Ringer)
	if cfg.RFS == 0 {
		in.auto = NewAutoRFS(RFSFor(32), l.RespSlot)
	}
	n := PutControl(in.mem, local.Desc())
	if err := fabric.Write(conn, local, 0, w.Grant, 0, n); err != nil {
		return nil, fmt.Errorf("rfp: writing control block: %w", err)
	}
	return in, nil
}

// Yielded tells the initiator that its caller gave the core to other work
// while waiting (more waiters than cores), so a retry's lateness after a
// miss is the caller's, not the server's.
func (in *Initiator) Yielded() { in.yields++ }

// Layout is the connection's geometry.
func (in *Initiator) Layout() Layout { return in.layout }

// Counters are the totals so far.
func (in *Initiator) Counters() Counters { return in.stats }

// RFS is the fetch size in use now.
func (in *Initiator) RFS() int {
	if in.auto != nil {
		return in.auto.RFS()
	}
	return in.cfg.RFS
}

// FetchDelayNS is the current wait before a first fetch.
func (in *Initiator) FetchDelayNS() int64 { return in.delay.NS() }

// Active is the number of requests in flight.
func (in *Initiator) Active() int { return in.active }

// Free says whether partition p can take another request now.
func (in *Initiator) Free(p int) bool {
	return in.inRing[p] < in.cfg.Window &&
		in.ops[p*in.layout.Slots+SlotOf(in.nextSeq[p], in.layout.Slots)].state == opIdle
}

// Submit queues a request for partition p and returns its slot index; it
// is posted by the next Progress. The caller validates sizes against the
// layout; Submit rejects what cannot fit.
func (in *Initiator) Submit(p int, op Op, key, value []byte, ttl uint32) (int, error) {
	if in.failed != nil {
		return -1, in.failed
	}
	if p < 0 || p >= in.layout.Partitions {
		return -1, fmt.Errorf("rfp: partition %d outside 0..%d", p, in.layout.Partitions-1)
	}
	if len(key) > MaxKeyLen || len(value) > in.layout.MaxValue {
		return -1, fmt.Errorf("rfp: key %d B / value %d B exceed %d / %d", len(key), len(value), MaxKeyLen, in.layout.MaxValue)
	}
	if !in.Free(p) {
		return -1, ErrRingFull
	}
	l := in.layout
	seq := in.nextSeq[p]
	s := SlotOf(seq, l.Slots)
	idx := p*l.Slots + s
	in.nextSeq[p]++
	in.inRing[p]++
	in.active++
	var flags uint8
	switch in.cfg.Mode {
	case ModeReply:
		flags = FlagReply
	case ModeHybrid:
		if in.hybrid.Reply() {
			flags = FlagReply
		}
	}
	off := l.ReqOff(p, s)
	n := PutRequest(in.mem[off:off+l.ReqSlot], seq, op, flags, key, value, ttl)
	rec := &in.ops[idx]
	now := in.now() // fresh: after a quiet spell the last Progress's clock is stale
	*rec = opRec{seq: seq, op: op, firstRead: true, state: opWaiting, sent: now, due: now + in.delay.NS()}
	if flags&FlagReply != 0 {
		ro := l.RespOff(p, s)
		PoisonResponse(in.mem[ro:], seq)
		rec.state = opReplyWait
	}
	in.pending = append(in.pending, fabric.Op{Kind: fabric.OpWrite, ID: uint64(idx)<<2 | idWrite,
		Local: in.local, LocalOff: off, Len: n, Remote: in.grant, RemoteOff: uint64(off)})
	in.stats.Writes++
	return idx, nil
}

func (in *Initiator) now() int64 { return int64(time.Since(in.epoch)) }

// behindMiss says an older request of the same partition is waiting to
// retry a READ that found nothing. A partition answers a client's requests
// in ring order, so this one cannot be ready either: its READ would be a
// wasted round trip (a stalled server used to cost one per request in the
// window, not one).
func (in *Initiator) behindMiss(idx int) bool {
	if in.missing == 0 {
		return false
	}
	slots := in.layout.Slots
	base := idx / slots * slots
	seq := in.ops[idx].seq
	for i := base; i < base+slots; i++ {
		o := &in.ops[i]
		if o.state == opWaiting && o.misses > 0 && int32(o.seq-seq) < 0 {
			return true
		}
	}
	return false
}

func (in *Initiator) postRead(idx, from, to int) {
	l := in.layout
	p, s := idx/l.Slots, idx%l.Slots
	off := l.RespOff(p, s) + from
	in.pending = append(in.pending, fabric.Op{Kind: fabric.OpRead, ID: uint64(idx)<<2 | idRead,
		Local: in.local, LocalOff: off, Len: to - from, Remote: in.grant, RemoteOff: uint64(off)})
	in.ops[idx].state = opReading
	in.ops[idx].fetched = to
	in.stats.Reads++
}

// Progress posts what is queued and due, reaps completions, and stores
// finished requests in out. It returns how many it stored. An error means
// the connection failed; every request in flight is lost with it.
func (in *Initiator) Progress(out []Result) (int, error) {
	if in.failed != nil {
		return 0, in.failed
	}
	now := in.now()
	in.clock = now
	l := in.layout
	nout := 0
	for idx := range in.ops {
		if nout == len(out) {
			break
		}
		rec := &in.ops[idx]
		switch rec.state {
		case opWaiting:
			if rec.due <= now && !in.behindMiss(idx) {
				in.postRead(idx, 0, in.RFS())
			}
		case opReplyWait:
			p, s := idx/l.Slots, idx%l.Slots
			off := l.RespOff(p, s)
			if nout < len(out) && in.tryFinish(idx, in.mem[off:off+l.RespSlot], &out[nout]) {
				nout++
			} else if rec.state == opReplyWait {
				in.maybeRing(p, rec, now)
			}
		}
	}
	if len(in.pending) > 0 {
		if in.ringer != nil {
			for i := range in.pending {
				if op := &in.pending[i]; op.ID&3 == idWrite {
					p := int(op.ID>>2) / l.Slots
					if now-in.postAt[p] > QuietRing {
						in.wake = append(in.wake, p)
					}
					in.postAt[p] = now
				}
			}
		}
		if err := in.conn.Post(in.pending); err != nil {
			return nout, in.fail(err)
		}
		in.pending = in.pending[:0]
		for _, p := range in.wake {
			in.rungAt[p] = now
			in.stats.Rings++
			in.ringer.RingBell(p)
		}
		in.wake = in.wake[:0]
	}
	n, err := in.conn.Poll(in.comps)
	if err != nil {
		return nout, in.fail(err)
	}
	for _, c := range in.comps[:n] {
		idx := int(c.ID >> 2)
		if c.Err != nil {
			return nout, in.fail(fmt.Errorf("rfp: %v of slot %d: %w", c.Kind, idx, c.Err))
		}
		if idx >= len(in.ops) {
			continue
		}
		rec := &in.ops[idx]
		if c.ID&3 == idWrite {
			rec.writeDone = true
			if rec.state == opDone && nout < len(out) {
				in.report(idx, &out[nout])
				nout++
			}
			continue
		}
		in.onRead(idx, now, out, &nout)
	}
	return nout, nil
}

func (in *Initiator) onRead(idx int, now int64, out []Result, nout *int) {
	l := in.layout
	rec := &in.ops[idx]
	p, s := idx/l.Slots, idx%l.Slots
	off := l.RespOff(p, s)
	var r Response
	buf := in.mem[off : off+l.RespSlot]
	last := rec.fetched
	st, need := ParseResponse(buf[:last], rec.seq, l.MaxValue, &r)
	first := rec.firstRead
	rec.firstRead = false
	switch st {
	case SlotEmpty:
		in.stats.NotReady++
		if rec.misses == 0 {
			in.missing++
		}
		if rec.misses < 255 {
			rec.misses++
		}
		if first {
			rec.missed = true // judged when the result comes: near miss or stall?
			rec.missYield = in.yields
		}
		if in.cfg.Mode == ModeHybrid {
			in.hybrid.OnFetch(false)
		}
		in.maybeRing(p, rec, now)
		// Retries back off per request: a server that is slow or dozing
		// must not cost a flood of READs. The first retry waits half the
		// delay, long enough that it rarely misses again.
		gap := in.delay.NS()/2 + 200
		gap <<= min(rec.reads, 7)
		if rec.reads < 255 {
			rec.reads++
		}
		rec.state, rec.due = opWaiting, now+min(gap, maxRetryGap)
	case SlotTorn:
		in.stats.Torn++
		rec.state, rec.due = opWaiting, now
	case SlotShort:
		if first {
			in.delay.OnFirstRead(true, in.active == 1, rec.sent, now)
		}
		in.stats.ExtraReads++
		in.postRead(idx, last, need)
	case SlotReady:
		if first {
			in.delay.OnFirstRead(true, in.active == 1, rec.sent, now)
		} else if rec.missed {
			// Only a near miss says the delay is short. A result that took
			// far longer (a stalled or dozing server) says nothing about the
			// delay, and counting it would ratchet every later fetch late.
			// But when the caller gave its core away after the miss, the
			// retry's lateness is its own: then ready at the first retry is
			// the best evidence of a near miss there is.
			near := now-rec.sent <= 2*in.delay.NS()+nearMiss ||
				rec.misses == 1 && in.yields != rec.missYield
			if near {
				in.delay.OnFirstRead(false, in.active == 1, rec.sent, now)
			}
			rec.missed = false
		}
		if rec.misses > 0 {
			in.missing--
		}
		if in.cfg.Mode == ModeHybrid {
			in.hybrid.OnFetch(true)
		}
		if in.auto != nil && rec.op == OpGet && r.Status == StatusOK {
			in.auto.Observe(len(r.Value)) // only values teach RFS
		}
		rec.state = opDone
		if rec.writeDone && *nout < len(out) {
			in.report(idx, &out[*nout])
			*nout++
		}
	}
}

func (in *Initiator) tryFinish(idx int, slot []byte, out *Result) bool {
	rec := &in.ops[idx]
	var r Response
	st, _ := ParseResponse(slot, rec.seq, in.layout.MaxValue, &r)
	if st != SlotReady {
		return false
	}
	in.stats.Replied++
	if in.cfg.Mode == ModeHybrid {
		in.hybrid.OnReplied()
	}
	if !rec.writeDone {
		rec.state = opDone
		return false
	}
	in.report(idx, out)
	return true
}

// report hands a finished request to the caller and frees its slot.
func (in *Initiator) report(idx int, out *Result) {
	l := in.layout
	p, s := idx/l.Slots, idx%l.Slots
	off := l.RespOff(p, s)
	var r Response
	// The slot was validated when it became opDone; parse it again to
	// point Value at the bytes (no copy).
	ParseResponse(in.mem[off:off+l.RespSlot], in.ops[idx].seq, l.MaxValue, &r)
	*out = Result{Slot: idx, Status: r.Status, Value: r.Value}
	in.ops[idx].state = opIdle
	in.inRing[p]--
	in.active--
	in.stats.Ops++
}

func (in *Initiator) fail(err error) error {
	if in.failed == nil {
		in.failed = err
	}
	return in.failed
}

// Err is the connection failure that stopped the initiator, if any.
func (in *Initiator) Err() error { return in.failed }

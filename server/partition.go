package server

import (
	"encoding/json"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jakiro-kv/jakiro/kv"
	"github.com/jakiro-kv/jakiro/rfp"
)

// partition is one EREW partition: its goroutine alone touches kv and the
// partition's rings of every session.
//
// A pass looks at the partition's polled set: the peers that had a
// request in the last rfp.ActiveHold; after a doorbell ring at the peers
// the fabric names as ringers (or, where it names none, at its warm set:
// recently polled); and before blocking on the bell at its warm set. Every peer is
// looked at (a sweep, sweepChunk peers per pass beside the polled set)
// only after a ring that no FlagRang request explains, and every
// housekeepEvery, so a pass costs what the active clients cost, not what
// the connected ones cost (the contract with clients is in rfp/bells.go).
// Fabrics without doorbells, and IdlePoll, look at every peer every pass.
type partition struct {
	id      int
	srv     *Server
	kv      *kv.Partition
	seen    atomic.Uint64 // session-list generation this goroutine has moved to, or asleep
	stopped atomic.Bool

	held   uint64  // the generation of all
	all    []*peer // every peer, as of generation held
	polled []*peer // peers with a request in the last rfp.ActiveHold
	// warm are peers that left the polled set within warmHold: after a
	// ring the ringer is most likely one of them, so they are looked at
	// at once, before the sweep reaches them.
	warm     []*peer
	warmScan bool // look at the warm set in the next pass

	// Where the fabric names ringers (rfp.Listener.NamesRingers), a ring
	// brings a look at its ringers instead of the warm set: bySrc finds
	// a peer by its BellSource (rebuilt with all).
	namesRingers bool
	ringerScan   bool // look at the named ringers in the next pass
	bySrc        []*peer
	ringers      []int
	// fresh are peers published since the last reload, looked at once: a
	// new client may ring before the server publishes it, and its name is
	// then dropped (a shm client skips reminders to an awake partition).
	fresh []*peer

	// Rings not yet accounted for, and FlagRang requests found since the
	// last accounting (accountRings): a pass that found a marked request
	// for every ring needs no sweep to find the ringers.
	countsRings bool // the fabric counts rings (else every ring sweeps)
	ringsSeen   uint64
	ringDebt    uint64
	marks       uint64

	sweeping  bool // a sweep is under way
	sweepLeft int  // peers it has still to look at
	sweepAt   int  // next index into all
	reqs      [maxPerPass]rfp.Request
	hashes    [maxPerPass]uint64

	served, dozes, errs, sweeps, bells uint64
	pubMu                              sync.Mutex     // guards pub
	pub                                PartitionStats // snapshot for other goroutines
	published                          bool           // under pubMu: pub is set
	pubAt                              int64
}

const (
	// pumpEvery: a polled peer's connection is pumped (rfp.Session.Pump)
	// at every pumpEvery-th empty look: a syscall where the fabric is tcp.
	pumpEvery = 2
	// maxPerPass bounds the requests of one peer a pass serves: a client
	// keeping a deep ring full waits its turn like the others.
	maxPerPass = 8
	// controlMask: control-plane work (stop, client list, clock, bell)
	// every controlMask+1 passes; a clock read costs more than a pass over
	// a few rings.
	controlMask = 15
	// spinAlone: an idle partition polls this long without yielding its
	// core (a client's next request usually comes within it).
	spinAlone = int64(10 * time.Microsecond)
	// yieldMask: an idle partition also yields to goroutines every
	// yieldMask+1 idle control passes (more partitions than Ps must run).
	yieldMask = 3
	// bellCheckEvery: a busy partition checks its bell this often, so a
	// client that rang (its session not polled) waits at most about this.
	bellCheckEvery = int64(20 * time.Microsecond)
	// warmHold: how long a peer stays in the warm set after its last
	// request.
	warmHold = int64(time.Second)
	// warmMax bounds the warm set: it is looked at whole after a ring.
	warmMax = 256
	// sweepChunk bounds the peers a pass sweeps beside its polled set.
	sweepChunk = 32
	// maxMarks bounds the FlagRang requests kept to account for rings not
	// read yet: a client marking requests it did not ring for can explain
	// away at most this many other clients' rings (they ring again).
	maxMarks = 64
	// housekeepEvery: a sweep even without rings while awake;
	// asleepHousekeep: the longest a partition blocks on its bell. A
	// client whose ring went unexplained or got lost rings again, unmarked
	// (rfp.RingAfter), which brings a sweep; housekeeping is only the
	// backstop, and rare: with 10,000 idle clients a sweep takes about
	// 10 ms of passes that each serve the active clients late.
	housekeepEvery  = int64(time.Second)
	asleepHousekeep = int64(time.Second)
	// publishEvery is how often a partition snapshots its stats.
	publishEvery = int64(100 * time.Millisecond)
	// pruneEvery: how often the polled set drops peers idle for
	// rfp.ActiveHold.
	pruneEvery = int64(100 * time.Microsecond)
	// asleep is what seen holds while the partition blocks on its bell: it
	// touches no peer until it has reloaded the list.
	asleep = ^uint64(0)
)

func (p *partition) publish(now int64) {
	p.pubAt = now
	st := p.stats()
	// Copied under a lock, not swapped in by pointer: a partition that
	// sleeps often publishes as often, and must not allocate for it.
	p.pubMu.Lock()
	p.pub, p.published = st, true
	p.pubMu.Unlock()
}

func (p *partition) stats() PartitionStats {
	return PartitionStats{Partition: p.id, Clients: p.srv.Clients(), Polled: len(p.polled), Served: p.served,
		Dozes: p.dozes, Sweeps: p.sweeps, Bells: p.bells, Rings: p.srv.ln.BellRings(p.id), ReplyErrs: p.errs, KV: p.kv.Stats()}
}

// reload moves to the latest peer list and drops unpublished peers from
// the polled set.
func (p *partition) reload() {
	s := p.srv
	gen := s.gen.Load()
	if gen == p.held {
		return
	}
	p.all = *s.list.Load()
	p.held = gen
	p.seen.Store(gen)
	p.prune(0, 0, true)
	if p.namesRingers {
		p.indexSources()
	}
}

// indexSources rebuilds bySrc from all, and notes in fresh the peers it
// did not index before.
func (p *partition) indexSources() {
	for _, c := range p.all {
		if c.src < 0 {
			continue
		}
		if c.src >= len(p.bySrc) {
			p.bySrc = append(p.bySrc, make([]*peer, c.src+1-len(p.bySrc))...)
		}
		if p.bySrc[c.src] != c {
			p.fresh = append(p.fresh, c)
		}
	}
	clear(p.bySrc)
	for _, c := range p.all {
		if c.src >= 0 {
			p.bySrc[c.src] = c
		}
	}
	// Fresh peers of an older list not looked at yet stay only while
	// published: an unpublished one may be freed once we hold this list.
	kept := p.fresh[:0]
	for _, c := range p.fresh {
		if p.bySrc[c.src] == c {
			kept = append(kept, c)
		}
	}
	clear(p.fresh[len(kept):])
	p.fresh = kept
}

// scanRingers serves the peers named as ringers since the last look (those
// not polled anyway).
func (p *partition) scanRingers(now int64) int {
	p.ringers = p.srv.ln.TakeRingers(p.id, p.ringers[:0])
	work := 0
	for _, src := range p.ringers {
		if src < len(p.bySrc) {
			if c := p.bySrc[src]; c != nil && !c.parts[p.id].polled {
				work += p.serveFrom(c, now)
			}
		}
	}
	return work
}

// wake ends an asleep spell: the partition says again which list it
// holds before it loads a newer one. Were it to load first, a reaper
// that still saw asleep could free a peer of the list just loaded.
func (p *partition) wake() { p.seen.Store(p.held) }

// prune moves from the polled set to the warm set the peers without a
// request since before cutoff, drops from the warm set those without one
// for warmHold, and drops gone or dead peers from both.
func (p *partition) prune(now, cutoff int64, goneOnly bool) {
	kept := p.polled[:0]
	for _, c := range p.polled {
		pp := &c.parts[p.id]
		gone := c.gone.Load() || c.dead.Load()
		if gone || !goneOnly && pp.lastReq < cutoff {
			pp.polled = false
			if !gone {
				c.sess.Unpump() // the fabric's thread reads it again
			}
			if !gone && !pp.warm && len(p.warm) < warmMax {
				pp.warm = true
				p.warm = append(p.warm, c)
			}
			continue
		}
		kept = append(kept, c)
	}
	clear(p.polled[len(kept):])
	p.polled = kept
	warm := p.warm[:0]
	for _, c := range p.warm {
		pp := &c.parts[p.id]
		if c.gone.Load() || c.dead.Load() || pp.polled || pp.lastReq < now-warmHold {
			pp.warm = false
			continue
		}
		warm = append(warm, c)
	}
	clear(p.warm[len(warm):])
	p.warm = warm
}

func (p *partition) run() {
	defer p.srv.wg.Done()
	defer p.stopped.Store(true)
	s := p.srv
	bells := s.ln.HasDoorbells() && !s.cfg.IdlePoll
	spin := newSpin(int64(s.cfg.SpinIdle))
	crowded := s.cfg.Partitions >= runtime.GOMAXPROCS(0)
	var now, lastWork, bellAt, houseAt, pruneAt int64
	idlePasses := 0
	p.startSweep()
	for pass := 0; ; pass++ {
		// While sweeping a pass is long (a chunk of peers' memory to
		// touch): control work every pass then, or a ring would wait
		// controlMask slow passes to be seen.
		if pass&controlMask == 0 || p.sweeping {
			select {
			case <-s.stop:
				return
			default:
			}
			p.reload()
			now = s.now()
			if now-p.pubAt >= publishEvery {
				p.publish(now)
			}
			if now-pruneAt >= pruneEvery {
				pruneAt = now
				p.prune(now, now-rfp.ActiveHold, false)
			}
			if bells && now-bellAt >= bellCheckEvery {
				bellAt = now
				p.checkBell(0)
			}
			if now-houseAt >= housekeepEvery {
				houseAt = now
				p.startSweep()
			}
		}
		var work int
		if bells {
			work = p.bellPass(now)
		} else {
			work = p.scan(p.all, now)
		}
		if work > 0 {
			lastWork, idlePasses = now, 0
			continue
		}
		if pass&controlMask != 0 {
			continue
		}
		// An idle pass with a fresh clock.
		if idle := now - lastWork; idle < spin.ns {
			// Keep looking, but past a short gap between one client's
			// requests let whoever else needs this core run: the clients
			// may share it.
			if idle >= spinAlone {
				yieldCore()
			}
			// Gosched only where partitions may hold every P: with a P
			// idle, other goroutines run there anyway, and a Gosched
			// would wake a thread for it (a futex and a context switch
			// each, and the partition often moves to that thread).
			if idlePasses++; crowded && idlePasses&yieldMask == 0 {
				runtime.Gosched()
			}
			continue
		}
		if !bells {
			p.dozes++
			doze(s.cfg.DozeSleep) // no doorbells (verbs): poll, slowly
			pass = -1             // fresh clock and list before the next pass
			continue
		}
		if p.sweeping {
			continue // a look at every peer under way ends first
		}
		// A session that sent without ringing is polled or warm (it sent
		// within QuietRing of a request found here, rfp/bells.go): one
		// more look at the warm ones, and every request is either seen or
		// announced by a ring the bell keeps.
		if p.scan(p.warm, now) > 0 {
			lastWork = now
			continue
		}
		p.dozes++
		p.publish(now) // nothing changes while asleep: stats stay true
		for _, c := range p.polled {
			c.sess.Unpump() // a ring must reach the bell while we sleep
		}
		p.seen.Store(asleep)
		rang := p.checkBell(time.Duration(houseAt + asleepHousekeep - now))
		p.wake()
		pass = -1
		woke := s.now()
		spin.slept(woke-now, rang)
		if rang {
			// A client is there: stay awake even if its request has not
			// landed yet.
			lastWork = woke
			bellAt = lastWork
		} else {
			p.startSweep() // housekeeping
		}
	}
}

// spinTime is how long an idle partition polls before blocking on its
// bell: from the configured minimum up to spinGrowth times it. A ring that
// ends a short sleep says a longer spin would have caught the request
// without the wake-up (microseconds to hundreds of them here): the spin
// doubles. A long sleep says the clients went quiet: it halves.
type spinTime struct{ ns, min, max int64 }

// spinGrowth bounds the adaptive spin, as a multiple of the minimum.
const spinGrowth = 10

func newSpin(min int64) spinTime { return spinTime{ns: min, min: min, max: spinGrowth * min} }

// slept adapts the spin after a sleep of d that a ring ended (rang) or
// that timed out.
func (t *spinTime) slept(d int64, rang bool) {
	switch {
	case rang && d < t.max:
		t.ns = min(2*t.ns, t.max)
	case !rang || d > 4*t.max:
		t.ns = max(t.ns/2, t.min)
	}
}

// bellPass is one pass of a partition with doorbells: the polled set, the
// warm set after a ring, the rings' accounting, and the next chunk of a
// sweep under way. It returns the requests served.
func (p *partition) bellPass(now int64) int {
	work := p.scan(p.polled, now)
	if p.ringerScan {
		p.ringerScan = false
		work += p.scanRingers(now)
	}
	if len(p.fresh) > 0 {
		work += p.scan(p.fresh, now)
		clear(p.fresh)
		p.fresh = p.fresh[:0]
	}
	if p.warmScan {
		p.warmScan = false
		work += p.scan(p.warm, now)
	}
	if p.ringDebt > 0 {
		p.accountRings()
	}
	if p.sweeping {
		work += p.sweepStep(now)
	}
	return work
}

// checkBell waits up to d for the bell (d <= 0: only looks) and notes a
// ring.
func (p *partition) checkBell(d time.Duration) bool {
	rang, _ := p.srv.ln.WaitBell(p.id, d)
	if rang {
		p.rang(p.srv.ln.BellRings(p.id))
	}
	return rang
}

// rang notes that the bell rang, n rings in all so far (where the fabric
// counts them): the polled and warm sets are looked at in this pass, and
// the rings are accounted for after it.
func (p *partition) rang(n uint64) {
	p.bells++
	if p.namesRingers {
		p.ringerScan = true
	} else {
		p.warmScan = true
	}
	if !p.countsRings {
		p.startSweep()
		return
	}
	p.ringDebt += n - p.ringsSeen
	p.ringsSeen = n
	if p.ringDebt == 0 {
		p.startSweep() // a ring the fabric did not count
	}
}

// accountRings runs after a pass's polled and warm scans: rings that the
// FlagRang requests found cannot explain came from sessions this
// partition does not poll, so it looks at every session.
func (p *partition) accountRings() {
	if p.ringDebt > p.marks {
		p.startSweep()
	}
	p.ringDebt, p.marks = 0, 0
}

// startSweep (re)starts a look at every peer from where the last one
// stopped: a chunk of them per pass, beside the polled set, so a sweep
// over thousands of idle peers does not stall the active ones.
func (p *partition) startSweep() {
	if !p.sweeping {
		p.sweeps++
	}
	p.sweeping, p.sweepLeft = true, len(p.all)
}

// sweepStep looks at the sweep's next peers (those not polled anyway) and
// reports the requests it served.
func (p *partition) sweepStep(now int64) int {
	n := min(sweepChunk, p.sweepLeft, len(p.all))
	work := 0
	for i := 0; i < n; i++ {
		if p.sweepAt >= len(p.all) {
			p.sweepAt = 0
		}
		c := p.all[p.sweepAt]
		p.sweepAt++
		if !c.parts[p.id].polled {
			work += p.serveFrom(c, now)
		}
	}
	p.sweepLeft -= n
	if p.sweepLeft <= 0 || len(p.all) == 0 {
		p.sweeping = false
	}
	return work
}

// scan serves the ready requests of peers, at most maxPerPass each, and
// returns how many it served.
func (p *partition) scan(peers []*peer, now int64) int {
	work := 0
	for _, c := range peers {
		work += p.serveFrom(c, now)
	}
	return work
}

// serveFrom serves up to maxPerPass ready requests of c and keeps c in the
// polled set if it had any.
func (p *partition) serveFrom(c *peer, now int64) int {
	if c.dead.Load() {
		return 0
	}
	pp := &c.parts[p.id]
	n := c.sess.PollBatch(p.id, now, p.reqs[:])
	if n == 0 && pp.polled {
		// A busy client's next request may be in the fabric still
		// (tcp): take it on this thread.
		if pp.empty++; pp.empty%pumpEvery == 1 && c.sess.Pump() {
			n = c.sess.PollBatch(p.id, now, p.reqs[:])
		}
	}
	if n == 0 {
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
	if err := c.sess.FlushReplies(p.id); err != nil {
		p.replyFailed(c, err)
	}
	pp.lastReq = now
	if !pp.polled {
		pp.polled = true
		p.polled = append(p.polled, c)
	}
	return n
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
	}
	return rfp.StatusServerError
}

// serve runs one request and publishes its response.
func (p *partition) serve(c *peer, r *rfp.Request, h uint64) {
	sess := c.sess
	val := sess.ResponseValue(p.id)
	st, n := rfp.StatusBadRequest, 0
	switch r.Op {
	case rfp.OpGet, rfp.OpPut, rfp.OpDelete:
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
		}
	case rfp.OpStats:
		st, n = rfp.StatusOK, p.statsJSON(val)
	}
	p.served++
	if err := sess.Respond(p.id, r.Flags&rfp.FlagReply != 0, st, n); err != nil {
		p.replyFailed(c, err)
	}
}

func (p *partition) replyFailed(c *peer, err error) {
	p.errs++
	if errors.Is(err, rfp.ErrReplyStalled) {
		c.fail(err) // this partition must not wait on it again
	}
}

// PartitionStats is what STATS returns for one partition.
type PartitionStats struct {
	Partition int      `json:"partition"`
	Clients   int      `json:"clients"`
	Polled    int      `json:"polled"` // clients with a request in the last rfp.ActiveHold
	Served    uint64   `json:"served"`
	Dozes     uint64   `json:"dozes"`
	Sweeps    uint64   `json:"sweeps"` // looks at every client (after a ring, before blocking, housekeeping)
	Bells     uint64   `json:"bells"`  // times the partition found its bell rung
	Rings     uint64   `json:"rings"`  // rings of its bell (several may be found at once); 0 where the fabric does not count
	ReplyErrs uint64   `json:"reply_errors"`
	KV        kv.Stats `json:"kv"`
}

func (p *partition) statsJSON(dst []byte) int {
	b, err := json.Marshal(p.stats())
	if err != nil || len(b) > len(dst) {
		return 0
	}
	return copy(dst, b)
}

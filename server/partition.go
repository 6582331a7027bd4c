package server

import (
	"runtime"
	"strings"
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
// An idle partition yields its core to other threads now and then, or,
// where yields lose it for scheduler slices, dozes on its bell (crowd.go).
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
	// fresh are peers published since the last reload, looked at once
	// and then polled (scanFresh): a new client may ring before the
	// server publishes it, and its name is then dropped (a shm client
	// skips reminders to an awake partition).
	fresh []*peer

	// Rings not yet accounted for, and FlagRang requests found since the
	// last accounting (accountRings): a pass that found a marked request
	// for every ring needs no sweep to find the ringers.
	countsRings bool // the fabric counts rings (else every ring sweeps)
	ringsSeen   uint64
	ringDebt    uint64
	marks       uint64

	sweeping  bool  // a sweep is under way
	sweepLeft int   // peers it has still to look at
	sweepAt   int   // next index into all
	inbox     inbox // the memcached door's commands (door.go)
	// token says who holds the store: the partition's goroutine, or while
	// it sleeps, a door connection (door.go).
	token  atomic.Int32
	reqs   [maxPerPass]rfp.Request
	val    []byte // a response's value, before it goes into the ring
	hashes [maxPerPass]uint64

	crowd crowdWatch // whether yields lose the core (crowd.go)

	served, dozes, crowdDozes, errs, sweeps, bells uint64
	replyWrites                                    uint64         // reply WRITEs posted (spans of responses)
	pubMu                                          sync.Mutex     // guards pub
	pub                                            PartitionStats // snapshot for other goroutines
	published                                      bool           // under pubMu: pub is set
	pubAt                                          int64
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

func (p *partition) run() {
	defer p.srv.wg.Done()
	defer p.stopped.Store(true)
	p.takeBack() // the partition holds its store from the start (door.go)
	s := p.srv
	bells := s.ln.HasDoorbells() && !s.cfg.IdlePoll
	spin := newSpin(int64(s.cfg.SpinIdle))
	holdAllPs := s.cfg.Partitions >= s.procs.full // with RFP clients (procs.go)
	// Yields keep the partition's P (idle_linux.go) on shm only: the tcp
	// fabric's goroutines read the sockets, and a tcp join was 4-5%
	// slower (p50, 8 rounds twice) with the P kept through the yields.
	keepP := !holdAllPs && strings.HasPrefix(s.cfg.Listen, "shm:")
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
		// Door batches keep a partition with bells no more awake than its
		// RFP clients do: asleep, it lends the store, and the door's
		// connections run their batches themselves (door.go).
		var door int
		if p.inbox.n.Load() != 0 {
			door = p.serveDoor()
		}
		var work int
		if bells {
			work = p.bellPass(now)
		} else {
			work = p.scan(p.all, now)
		}
		if work > 0 || door > 0 && !bells {
			lastWork, idlePasses = now, 0
			continue
		}
		if pass&controlMask != 0 {
			continue
		}
		// An idle pass with a fresh clock. Without any RFP client there
		// is nothing to spin for: only the memcached door brings work,
		// and it finds the store lent while the partition sleeps.
		if idle := now - lastWork; idle < spin.ns && len(p.all) > 0 {
			// Keep looking, but past a short gap between one client's
			// requests let whoever else needs this core run: the clients
			// may share it.
			if idle >= spinAlone {
				if bells && p.crowd.crowded(now) {
					p.crowdDozes++ // crowd.go: a yield would lose the core for a slice
					p.checkBell(crowdDoze)
					pass = -1 // fresh clock and list before the next pass
					continue
				}
				yieldCore(keepP)
				p.crowd.yielded(now, s.now())
			}
			// Gosched only where partitions may hold every P: with a P
			// idle, other goroutines run there anyway, and a Gosched
			// would wake a thread for it (a futex and a context switch
			// each, and the partition often moves to that thread).
			if idlePasses++; holdAllPs && idlePasses&yieldMask == 0 {
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
		if p.inbox.n.Load() != 0 { // the door queued before it saw asleep
			p.wake()
			pass = -1
			continue
		}
		if s.gen.Load() != p.held { // a client published before Server.add saw asleep
			p.wake()
			pass = -1
			continue
		}
		p.lend() // door.go: a door connection may run its commands itself
		rang := p.checkBell(time.Duration(houseAt + asleepHousekeep - now))
		p.wake() // first: door connections stop taking the token
		p.takeBack()
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

package server

import (
	"encoding/json"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/jakiro-kv/jakiro/kv"
	"github.com/jakiro-kv/jakiro/rfp"
)

// partition is one EREW partition: its goroutine alone touches kv and the
// partition's rings of every session.
type partition struct {
	id      int
	srv     *Server
	kv      *kv.Partition
	seen    atomic.Uint64 // session-list generation this goroutine has moved to
	stopped atomic.Bool
	served  uint64
	dozes   uint64
	errs    uint64
	pub     atomic.Pointer[PartitionStats] // snapshot for other goroutines
	pubAt   int64
}

// publishEvery is how often a partition snapshots its stats for metrics.
const publishEvery = int64(100 * time.Millisecond)

func (p *partition) publish(now int64) {
	p.pubAt = now
	st := p.stats()
	p.pub.Store(&st)
}

func (p *partition) stats() PartitionStats {
	return PartitionStats{Partition: p.id, Clients: p.srv.Clients(), Served: p.served,
		Dozes: p.dozes, ReplyErrs: p.errs, KV: p.kv.Stats()}
}

func (p *partition) run() {
	defer p.srv.wg.Done()
	defer p.stopped.Store(true)
	lowerTimerSlack()
	s := p.srv
	var reqs [rfp.MaxSlots]rfp.Request
	var hashes [rfp.MaxSlots]uint64
	var idleSince int64
	var now int64
	var list []*rfp.Session
	for pass := 0; ; pass++ {
		// Control-plane work (stop, client list, clock) every few passes:
		// a clock read costs more than a pass over a few rings.
		if pass&15 == 0 {
			select {
			case <-s.stop:
				return
			default:
			}
			gen := s.gen.Load()
			list = *s.list.Load()
			p.seen.Store(gen)
			now = s.now()
			if now-p.pubAt >= publishEvery {
				p.publish(now)
			}
		}
		work := 0
		for _, sess := range list {
			for {
				n := sess.PollBatch(p.id, now, reqs[:])
				if n == 0 {
					break
				}
				// Start every lookup's memory loads before doing any: the
				// misses of a window of requests overlap instead of queueing.
				for i := 0; i < n; i++ {
					hashes[i] = kv.Hash(reqs[i].Key)
					p.kv.Prefetch(hashes[i])
				}
				if n > 1 {
					for i := 0; i < n; i++ {
						p.kv.PrefetchItem(hashes[i])
					}
				}
				for i := 0; i < n; i++ {
					p.serve(sess, &reqs[i], hashes[i])
				}
				work += n
			}
		}
		if work > 0 {
			idleSince = 0
			continue
		}
		if pass&15 != 0 {
			continue
		}
		if idleSince == 0 {
			idleSince = now
		}
		if now-idleSince < int64(s.cfg.SpinIdle) {
			if pass&63 == 0 {
				runtime.Gosched() // more partitions than cores must still all run
			}
			continue
		}
		p.dozes++
		if s.ln.HasDoorbells() && !s.cfg.IdlePoll {
			// Block until a client rings (it does after rfp.RingAfter
			// without an answer); wake now and then for housekeeping.
			if rang, _ := s.ln.WaitBell(p.id, bellTimeout); rang {
				idleSince = 0 // a client is there: spin again
			}
		} else {
			doze(s.cfg.DozeSleep) // no doorbells (verbs): poll, slowly
		}
		pass = -1 // refresh clock and client list before the next scan
	}
}

// bellTimeout bounds a partition's sleep between doorbells.
const bellTimeout = 100 * time.Millisecond

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
func (p *partition) serve(sess *rfp.Session, r *rfp.Request, h uint64) {
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
		p.errs++
	}
}

// PartitionStats is what STATS returns for one partition.
type PartitionStats struct {
	Partition int      `json:"partition"`
	Clients   int      `json:"clients"`
	Served    uint64   `json:"served"`
	Dozes     uint64   `json:"dozes"`
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

package server

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/jakiro-kv/jakiro/server/memcache"
)

// The memcached door (package memcache) runs its commands on the same
// partitions as the RFP clients, through each partition's inbox: a
// connection hands a partition all its commands of a round in one Batch;
// the partition's goroutine takes the inbox whole once per pass, runs the
// commands and tells the connection. A partition asleep on its bell is
// rung.
//
// Exclusive access holds through a token (partition.token): the
// partition's goroutine holds it while awake. A partition lends the token
// while it sleeps on its bell: at once with no RFP client, else once its
// RFP clients sent nothing for its spin (door batches do not keep it
// awake). A door connection that takes the token runs its batch itself,
// at no hand-over cost, as a memcached worker thread would, and gives it
// back. The partition takes it back when it wakes (an RFP request waits
// out one batch at most) and holds it when it stops, so the store is
// never freed under a connection. While RFP clients keep it awake nothing
// is lent: their hot path pays nothing for the door, whose batches go
// through the inbox.

// inbox is a partition's queue of door batches.
type inbox struct {
	n    atomic.Int32 // batches queued: the pass's one check
	mu   sync.Mutex
	q    []*memcache.Batch
	took []*memcache.Batch // the partition's: swapped with q
}

// Door returns the memcache.Backend of this server.
func (s *Server) Door() memcache.Backend { return doorBackend{s} }

type doorBackend struct{ s *Server }

func (b doorBackend) Partitions() int             { return len(b.s.parts) }
func (b doorBackend) PartitionOf(hash uint64) int { return b.s.store.PartitionOf(hash) }
func (b doorBackend) Stopped() <-chan struct{}    { return b.s.stop }
func (b doorBackend) Now() uint32                 { return b.s.store.Now() }
func (b doorBackend) MaxValue() int {
	if b.s.cfg.DoorMaxValue > 0 {
		return b.s.cfg.DoorMaxValue
	}
	return b.s.cfg.MaxValue
}
func (b doorBackend) Enqueue(p int, x *memcache.Batch) bool { return b.s.parts[p].enqueue(x) }

// Polling says RFP clients are connected: the door's connections do not
// spin beside them. Spinning while their partitions sleep (lent) would
// double the door's rate beside an idle client, but an RFP request then
// waits for a core to wake its partition on: p99 4.4 ms against 0.8 ms
// for a GET every 2 ms beside the door at full load, on 2 cores.
func (b doorBackend) Polling() bool { return b.s.clients.Load() > 0 }

// Evicts reports whether the store evicts when full (stats settings'
// evictions): not in store mode.
func (b doorBackend) Evicts() bool { return !b.s.cfg.Store }

// Stats sums the partitions' latest snapshots under memcached's names.
func (b doorBackend) Stats() []memcache.Stat {
	var items, bytes, limit, evictions, expired uint64
	for _, st := range b.s.Stats() {
		items += st.KV.Items
		bytes += st.KV.Bytes
		limit += st.KV.Capacity
		evictions += st.KV.Evictions
		expired += st.KV.Expired
	}
	u := func(v uint64) string { return fmt.Sprint(v) }
	return []memcache.Stat{{Name: "curr_items", Value: u(items)}, {Name: "bytes", Value: u(bytes)},
		{Name: "limit_maxbytes", Value: u(limit)}, {Name: "evictions", Value: u(evictions)},
		{Name: "expired_unfetched", Value: u(expired)}, {Name: "rfp_clients", Value: fmt.Sprint(b.s.Clients())}}
}

// enqueue runs x on a lent store (runLent) or queues it for the partition.
// A queued batch is never stranded: whoever holds the token serves the
// inbox before letting it go and looks again after (releaseLent); a
// partition holding its token while it sleeps is rung. The partition sets
// seen to asleep before its last look at the inbox, and this reads seen
// after adding to n: one of the two sees the other.
func (p *partition) enqueue(x *memcache.Batch) bool {
	select {
	case <-p.srv.stop:
		return false
	default:
	}
	if p.runLent(x) {
		return true
	}
	p.inbox.mu.Lock()
	p.inbox.q = append(p.inbox.q, x)
	p.inbox.mu.Unlock()
	p.inbox.n.Add(1)
	for p.seen.Load() == asleep {
		switch p.token.Load() {
		case tokenFree:
			if p.token.CompareAndSwap(tokenFree, tokenDoor) {
				p.serveDoor()
				p.releaseLent()
				return true
			}
		case tokenDoor:
			return true // its holder serves the inbox before it lets go
		default:
			p.srv.ln.RingBell(p.id) // the partition holds it, asleep
			return true
		}
	}
	return true
}

// serveDoor runs the batches in the inbox and returns the commands run.
func (p *partition) serveDoor() int {
	in := &p.inbox
	in.mu.Lock()
	in.q, in.took = in.took[:0], in.q
	in.n.Store(0)
	in.mu.Unlock()
	work := 0
	for i, x := range in.took {
		for _, c := range x.Cmds {
			c.Exec(p.kv)
		}
		work += len(x.Cmds)
		in.took[i] = nil
		x.Group.Done()
	}
	p.served += uint64(work)
	return work
}

// Token holders (partition.token).
const (
	tokenFree      = 0
	tokenPartition = 1
	tokenDoor      = 2
)

// runLent runs x on the connection's goroutine if the partition sleeps and
// lends its token, with whatever other connections queued meanwhile.
func (p *partition) runLent(x *memcache.Batch) bool {
	if p.seen.Load() != asleep || !p.token.CompareAndSwap(tokenFree, tokenDoor) {
		return false
	}
	for _, c := range x.Cmds {
		c.Exec(p.kv)
	}
	p.served += uint64(len(x.Cmds))
	x.Group.Done()
	if p.inbox.n.Load() != 0 {
		p.serveDoor()
	}
	p.releaseLent()
	return true
}

// releaseLent gives the token back, then takes it again to serve batches
// queued while it was held, unless the partition woke (it serves them).
func (p *partition) releaseLent() {
	for {
		p.token.Store(tokenFree)
		if p.inbox.n.Load() == 0 || p.seen.Load() != asleep || !p.token.CompareAndSwap(tokenFree, tokenDoor) {
			return
		}
		p.serveDoor()
	}
}

// lend lets door connections take the store while the partition sleeps.
func (p *partition) lend() { p.token.Store(tokenFree) }

// takeBack waits for a connection running a lent batch to finish.
func (p *partition) takeBack() {
	for !p.token.CompareAndSwap(tokenFree, tokenPartition) {
		runtime.Gosched()
	}
}

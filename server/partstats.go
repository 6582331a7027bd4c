package server

import (
	"encoding/json"

	"github.com/jakiro-kv/jakiro/kv"
)

// A partition's counters, and the snapshot other goroutines read.

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
		Dozes: p.dozes, CrowdDozes: p.crowdDozes, Sweeps: p.sweeps, Bells: p.bells, Rings: p.srv.ln.BellRings(p.id), ReplyWrites: p.replyWrites, ReplyErrs: p.errs, KV: p.kv.Stats()}
}

// PartitionStats is what STATS returns for one partition.
type PartitionStats struct {
	Partition int    `json:"partition"`
	Clients   int    `json:"clients"`
	Polled    int    `json:"polled"` // clients with a request in the last rfp.ActiveHold
	Served    uint64 `json:"served"`
	Dozes     uint64 `json:"dozes"`
	// CrowdDozes are short blocks on the bell instead of yields, while
	// yields lose the core to other threads for a slice (crowd.go).
	CrowdDozes uint64 `json:"crowd_dozes"`
	Sweeps     uint64 `json:"sweeps"` // looks at every client (after a ring, before blocking, housekeeping)
	Bells      uint64 `json:"bells"`  // times the partition found its bell rung
	Rings      uint64 `json:"rings"`  // rings of its bell (several may be found at once); 0 where the fabric does not count
	// ReplyWrites are the WRITEs that carried reply-mode responses: one
	// per client and pass (two where its ring wraps), not one per request.
	ReplyWrites uint64   `json:"reply_writes"`
	ReplyErrs   uint64   `json:"reply_errors"`
	KV          kv.Stats `json:"kv"`
}

func (p *partition) statsJSON(dst []byte) int {
	b, err := json.Marshal(p.stats())
	if err != nil || len(b) > len(dst) {
		return 0
	}
	return copy(dst, b)
}

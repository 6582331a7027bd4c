package acceptq

import (
	"time"
)

// Churn pacing. A peer that dials, handshakes and drops its connection at
// once, in a loop, without asking for anything, costs the acceptor a full
// handshake each time (an accept, socket options, its hello, the
// application's setup and teardown) for no work done: on a small machine
// a few hundred a second take the cores the other clients' requests
// need. The provider charges each connection that ends young with what
// it cost the server beyond the work it asked for (Charge: a handshake
// never followed by a request counts 1, so does each MiB of READs a peer
// reset before taking, however the provider weighs it); an honest
// short-lived client that connects, asks and leaves is charged nothing.
// Past ChurnBurst of debt (decaying at ChurnRate a second, and capped at
// twice ChurnBurst, so a source is paced for at most ChurnBurst/ChurnRate
// seconds after it stops), a source's handshakes start at most ChurnRate
// a second, in order. Nothing is refused: a churning loop is slowed to
// that pace, and a new dial from the same source waits behind the few
// handshakes its loops have pending.

// churn is one source's record of connections that ended young.
type churn struct {
	debt float64   // their charges, decaying at ChurnRate a second
	at   time.Time // when debt was last brought up to date
	next time.Time // the earliest start of this source's next handshake
}

// maxChurnSources bounds the sources tracked; past it, those whose debt
// has decayed are forgotten.
const maxChurnSources = 4096

// decay brings c.debt up to now.
func (c *churn) decay(now time.Time, rate float64) {
	c.debt = max(0, c.debt-now.Sub(c.at).Seconds()*rate)
	c.at = now
}

// Charge adds cost (in handshakes' worth) to src's debt: a connection
// from src ended young having cost the server that much beyond the work
// it asked for.
func (q *Queue[S]) Charge(src string, cost float64) {
	if q.cfg.ChurnRate <= 0 || !(cost > 0) {
		return
	}
	now := time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	c := q.churn[src]
	if c == nil {
		if len(q.churn) >= maxChurnSources {
			for s, o := range q.churn {
				if o.decay(now, q.cfg.ChurnRate); o.debt == 0 && !o.next.After(now) {
					delete(q.churn, s)
				}
			}
		}
		c = &churn{at: now}
		q.churn[src] = c
	}
	c.decay(now, q.cfg.ChurnRate)
	c.debt = min(c.debt+cost, 2*float64(q.cfg.ChurnBurst))
}

// Pace takes the next handshake slot of src and says how long that
// handshake would wait (for tests of the providers).
func (q *Queue[S]) Pace(src string) time.Duration { return q.pace(src) }

// pace is how long a handshake from src waits before it starts: 0 unless
// the source is past its churn burst; then its handshakes take slots
// 1/ChurnRate apart.
func (q *Queue[S]) pace(src string) time.Duration {
	if q.cfg.ChurnRate <= 0 {
		return 0
	}
	now := time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	c := q.churn[src]
	if c == nil {
		return 0
	}
	c.decay(now, q.cfg.ChurnRate)
	if c.debt <= float64(q.cfg.ChurnBurst) {
		if c.debt == 0 && !c.next.After(now) {
			delete(q.churn, src)
		}
		return 0
	}
	slot := now
	if c.next.After(slot) {
		slot = c.next
	}
	c.next = slot.Add(time.Duration(float64(time.Second) / q.cfg.ChurnRate))
	return slot.Sub(now)
}

package tcp

import "time"

// WRITE acks are coalesced as a NIC does: over tcp a reply-mode server's
// reply WRITE follows its request within microseconds, and one send then
// carries the request's ack and the reply (one syscall and one peer
// wakeup less per op); a client's next request carries the ack of the
// last reply. But a peer that only WRITEs (and nobody sending anything
// after) would wait for a timer, which a loaded machine fires late. So
// acks wait only on connections where they would have had company: each
// lone ack flush followed within ackDelay by another send scores a hit,
// each ack the timer had to send a miss, and acks wait while the score
// is at least ackTrust.
const (
	ackDelay    = 20 * time.Microsecond
	ackTrust    = 2
	ackScoreMax = 8
	ackScoreMin = -8
	ackMissCost = 3
)

// ackState is txState's ack coalescing, under txMu.
type ackState struct {
	timer *time.Timer
	armed bool  // acks are staged, waiting for company or the timer
	score int   // hits minus misses, within [ackScoreMin, ackScoreMax]
	lone  int64 // when acks last went out alone (0: not since a send)
}

func (a *ackState) hit() { a.score = min(a.score+1, ackScoreMax) }

// sending notes that a send starts: staged acks have company, and acks
// sent alone just before would have had it.
func (a *ackState) sending(now int64) {
	if a.armed || a.lone != 0 && now-a.lone < int64(ackDelay) {
		a.hit()
	}
	a.lone = 0
}

// sent notes that everything staged is out, acks included.
func (a *ackState) sent() {
	if a.armed {
		a.armed = false
		a.timer.Stop()
	}
}

// flushBatch ends a read pass: what the peer waits on goes now, and so do
// lone WRITE acks unless this connection has shown they get company.
func (c *conn) flushBatch() error {
	c.txMu.Lock()
	t := &c.tx
	lone := !t.urgent && !t.empty() && c.fd >= 0
	wait := lone && t.ack.score >= ackTrust
	if lone && !wait {
		t.ack.lone = 0 // this send is no company for the last lone acks
	}
	if wait && !t.ack.armed {
		t.ack.armed = true
		if t.ack.timer == nil {
			t.ack.timer = time.AfterFunc(ackDelay, c.ackTimeout)
		} else {
			t.ack.timer.Reset(ackDelay)
		}
	}
	c.txMu.Unlock()
	if wait {
		return nil
	}
	err := c.flush()
	if lone {
		c.txMu.Lock()
		t.ack.lone = nanotime()
		c.txMu.Unlock()
	}
	return err
}

// ackTimeout sends acks that found no company.
func (c *conn) ackTimeout() {
	c.txMu.Lock()
	a := &c.tx.ack
	if a.armed && !c.tx.empty() {
		a.score = max(a.score-ackMissCost, ackScoreMin)
	}
	a.armed = false
	c.txMu.Unlock()
	if err := c.flush(); err != nil {
		c.fail(c.readErr(err))
	}
}

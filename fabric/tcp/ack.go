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
	timed bool  // the timer runs for them (else conn.ackDue says when)
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

// acksSent notes that everything staged is out, acks included (txMu held).
func (c *conn) acksSent() {
	a := &c.tx.ack
	if a.armed {
		a.armed = false
		c.ackDue.Store(0)
		if a.timed {
			a.timed = false
			a.timer.Stop()
		}
	}
}

// dueWhileQuiet sets ackDue to due if c's input events are off, and says
// whether it did. Under armMu: whoever turns them back on looks at ackDue
// after, so acks staged this way are never left without a tick or a timer.
func (c *conn) dueWhileQuiet(due int64) bool {
	c.armMu.Lock()
	defer c.armMu.Unlock()
	if !c.quiet.Load() {
		return false
	}
	c.ackDue.Store(due)
	return true
}

// flushDueAcks sends staged acks whose wait (without a timer) is over.
func (c *conn) flushDueAcks() {
	if d := c.ackDue.Load(); d != 0 && nanotime() >= d {
		c.ackTimeout()
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
		switch {
		case c.dueWhileQuiet(nanotime() + int64(ackDelay)):
			// Driven, and the poller ticks for it (drive.go): the driver
			// or the tick sends the acks when due, and no Go timer is
			// armed per batch (arming one wakes the runtime's netpoller
			// thread: a context switch per request).
		case t.ack.timer == nil:
			t.ack.timer = time.AfterFunc(ackDelay, c.ackTimeout)
			t.ack.timed = true
		default:
			t.ack.timer.Reset(ackDelay)
			t.ack.timed = true
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
	a.armed, a.timed = false, false
	c.ackDue.Store(0)
	c.txMu.Unlock()
	if err := c.flush(); err != nil {
		c.fail(c.readErr(err))
	}
}

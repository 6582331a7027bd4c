package tcp

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// txState is the socket's write side, under conn.txMu: frames are staged
// in buf[start:] and sent with as few syscalls as the socket allows. What
// the socket does not take waits for its next "writable" event; if the
// peer takes nothing for the send timeout, the connection ends.
type txState struct {
	buf   []byte
	start int

	// Responses staged and not yet all sent: the stream offsets where
	// they end (respEnds[respHead:]), against the bytes sent so far.
	sent     uint64
	queued   uint64
	respEnds []uint64
	respHead int

	// stall detection: the last time the socket took bytes while some
	// were staged, and the timer that checks on it.
	progress int64
	timer    *time.Timer
	armed    bool
	// resume: a flush made room while rx was paused; whoever flushed
	// kicks rx once it has let go of txMu.
	resume bool

	// urgent: something staged that the peer waits on (a READ's data, an
	// error); without it only WRITE acks are staged, which may wait for
	// company (ack.go).
	urgent bool
	ack    ackState

	// READ data staged by reference (txref.go): refs[refHead:] are
	// unsent, refOff bytes of the first already out; refBytes is what
	// they have left.
	refs     []txRef
	refHead  int
	refOff   int
	refBytes int
}

func (t *txState) staged() int { return len(t.buf) - t.start + t.refBytes }
func (t *txState) empty() bool { return t.staged() == 0 }

func (t *txState) stopTimer() {
	if t.timer != nil {
		t.timer.Stop()
	}
	if t.ack.timer != nil {
		t.ack.timer.Stop()
	}
}

// unanswered counts the responses staged and not yet all sent.
func (t *txState) unanswered() int { return len(t.respEnds) - t.respHead }

func (t *txState) putReq(typ uint8, key uint32, addr uint64, n int, payload []byte) {
	var h [reqSize]byte
	h[0] = typ
	binary.LittleEndian.PutUint32(h[4:], key)
	binary.LittleEndian.PutUint64(h[8:], addr)
	binary.LittleEndian.PutUint32(h[16:], uint32(n))
	t.buf = append(t.buf, h[:]...)
	t.buf = append(t.buf, payload...)
	t.queued += uint64(reqSize + len(payload))
}

func (t *txState) putResp(status uint8, payload []byte) {
	t.buf = append(t.buf, frameResp, status)
	t.buf = append(t.buf, payload...)
	t.queued += uint64(respSize + len(payload))
	t.respEnds = append(t.respEnds, t.queued)
}

// putReadResp stages a good READ's response: its data by reference when
// long (txref.go), else copied. It takes over the caller's reference.
func (t *txState) putReadResp(r *region, off uint64, data []byte) {
	if len(data) < refMin {
		t.putResp(statusOK, data)
		r.release()
		return
	}
	t.buf = append(t.buf, frameResp, statusOK)
	t.queued += respSize
	t.putRef(r, off, data)
	t.respEnds = append(t.respEnds, t.queued)
}

// sentBytes accounts for n more bytes on the wire (sendStaged consumed
// them).
func (t *txState) sentBytes(n int) {
	t.sent += uint64(n)
	for t.respHead < len(t.respEnds) && t.respEnds[t.respHead] <= t.sent {
		t.respHead++
	}
	if t.respHead == len(t.respEnds) {
		t.respEnds, t.respHead = t.respEnds[:0], 0
	} else if t.respHead > 64 && t.respHead > len(t.respEnds)/2 {
		k := copy(t.respEnds, t.respEnds[t.respHead:])
		t.respEnds, t.respHead = t.respEnds[:k], 0
	}
}

// overfull says the peer has more responses waiting than it may have
// requests outstanding, or too many bytes of them: rx pauses.
func (c *conn) overfull() bool {
	return c.tx.unanswered() > c.peerDepth || c.tx.staged() > outHigh
}

// flushLocked sends what the socket takes of the staged bytes (txMu
// held). Staged bytes the socket refuses arm the stall timer.
func (c *conn) flushLocked() error {
	t := &c.tx
	if t.empty() || c.fd < 0 {
		return nil
	}
	now := nanotime()
	t.ack.sending(now)
	n, err := t.sendStaged(c.fd)
	if err != nil {
		return err
	}
	if n > 0 || t.progress == 0 {
		t.progress = now
	}
	t.sentBytes(n)
	if c.rxPause.Load() && t.unanswered() <= c.peerDepth && t.staged() <= outHigh/2 {
		c.rxPause.Store(false)
		t.resume = true
	}
	if t.empty() {
		// Keep a buffer of ordinary size; let a burst's go.
		if cap(t.buf) > outKeep {
			t.buf = nil
		}
		t.buf, t.start, t.progress = t.buf[:0], 0, 0
		t.urgent = false
		c.acksSent()
		return nil
	}
	if t.start > len(t.buf)/2 {
		t.slide()
	}
	c.wantWritable() // txMu before armMu, as in CloseBy
	if !t.armed {
		t.armed = true
		if t.timer == nil {
			t.timer = time.AfterFunc(c.sendTimeout, c.checkStall)
		} else {
			t.timer.Reset(c.sendTimeout)
		}
	}
	return nil
}

// flush sends what the socket takes now, and lets rx go on if that made
// the room it was waiting for.
func (c *conn) flush() error {
	c.txMu.Lock()
	err := c.flushLocked()
	resume := c.tx.resume
	c.tx.resume = false
	c.txMu.Unlock()
	if resume {
		c.kickRead(nil, true)
	}
	return err
}

// checkStall ends a connection whose peer took none of our bytes for the
// send timeout.
func (c *conn) checkStall() {
	c.txMu.Lock()
	t := &c.tx
	if t.empty() || t.progress == 0 || c.dead.Load() {
		t.armed = false
		c.txMu.Unlock()
		return
	}
	idle := time.Duration(nanotime() - t.progress)
	if idle < c.sendTimeout {
		t.timer.Reset(c.sendTimeout - idle)
		c.txMu.Unlock()
		return
	}
	staged := t.staged()
	c.txMu.Unlock()
	c.fail(fmt.Errorf("%w: fabric/tcp: peer stopped reading: it took none of %d bytes for %v (SendTimeout)", fabric.ErrPeerGone, staged, c.sendTimeout))
}

// onWritable is the poller's "room to send" event.
func (c *conn) onWritable() {
	if err := c.flush(); err != nil {
		c.fail(c.readErr(err))
	}
}

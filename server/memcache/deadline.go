package memcache

import (
	"time"
)

// Each deadline set updates a runtime timer under the poller's lock: with
// one per read and write of every round it cost more than running the
// command. A round whose bytes are all in the first read (nearly every
// one) needs no read deadline, and answers that fit the socket's buffer
// need no write deadline to be bounded; the bounds hold without setting
// one per round.

// boundedReader is the connection's source for its bufio.Reader: a read
// that waits for a round's first byte has no deadline, and the first read
// within a round sets one ReadTimeout away.
type boundedReader struct{ c *conn }

func (b boundedReader) Read(p []byte) (int, error) {
	c := b.c
	switch {
	case c.pumping:
		c.idle()
		return c.pumpRead(p)
	case c.midRound && !c.armedIn:
		c.nc.SetReadDeadline(time.Now().Add(c.d.cfg.ReadTimeout))
		c.readArmed, c.armedIn = true, true
	case !c.midRound:
		c.idle()
	}
	return c.sock.Read(p)
}

// idle sets the read deadline of a wait between rounds: none, or
// IdleTimeout away, renewed once it has run down by IdleTimeout/writeSlack
// (a timer update per round would cost more than the round).
func (c *conn) idle() {
	t := c.d.cfg.IdleTimeout
	if t <= 0 {
		if c.readArmed {
			c.nc.SetReadDeadline(time.Time{})
			c.readArmed = false
		}
		return
	}
	now := time.Now()
	if c.readArmed || now.Sub(c.idleAt) > t/writeSlack {
		c.nc.SetReadDeadline(now.Add(t))
		c.idleAt, c.readArmed = now, false
	}
}

// writeSlack is the part of WriteTimeout the write deadline may have run
// down when a round's answers start: it is renewed only once it has, so a
// write gets between WriteTimeout*(1-1/writeSlack) and WriteTimeout.
const writeSlack = 64

// armWrite renews the write deadline before a round's answers if it has
// run down by more than WriteTimeout/writeSlack.
func (c *conn) armWrite() {
	now := time.Now()
	if now.Sub(c.writeAt) > c.d.cfg.WriteTimeout/writeSlack {
		c.nc.SetWriteDeadline(now.Add(c.d.cfg.WriteTimeout))
		c.writeAt = now
	}
}

package tcp

import (
	"time"

	"golang.org/x/sys/unix"
)

// A connection is driven while a thread that waits on it reads its socket
// itself: Poll with ops outstanding (the initiator waiting for its
// responses), or Pump (a target busy-polling its memory for the peer's
// WRITEs). The poller would then be woken for every frame only to find it
// read, and on a machine with few cores its wake-ups take the core from
// the very threads doing the work. So the poller turns a driven
// connection's input events off (EPOLL_CTL_MOD without EPOLLIN) and turns
// them back on once nobody has driven it for driveWindow, or at once when
// the driver says it stops (Release). Turning them on raises an event if
// input is waiting, so nothing that came meanwhile is left unread.

// driveWindow is how long after a driver's last read the connection
// still counts as driven.
const driveWindow = 200 * time.Microsecond

// rearmTickMS: while some connection's input events are off, the poller
// wakes this often (milliseconds, epoll_wait's unit) to turn back on
// those nobody drives any more.
const rearmTickMS = 1

// drove notes a driver's read.
func (c *conn) drove() { c.drivenAt.Store(nanotime()) }

func (c *conn) driven() bool { return nanotime()-c.drivenAt.Load() < int64(driveWindow) }

// quieten turns c's input events off: a driver reads it.
// Only the poller's goroutine calls it, as it does rearmUndriven, so c is
// on the quiet list before the next tick looks.
func (p *poller) quieten(c *conn) {
	c.armMu.Lock()
	if c.quiet.Load() || c.dead.Load() || c.fd < 0 {
		c.armMu.Unlock()
		return
	}
	ev := c.event(false)
	if unix.EpollCtl(p.epfd, unix.EPOLL_CTL_MOD, c.fd, &ev) != nil {
		c.armMu.Unlock()
		return
	}
	c.quiet.Store(true)
	c.armMu.Unlock()
	p.mu.Lock()
	p.quiet = append(p.quiet, c)
	p.mu.Unlock()
}

// rearmLocked turns c's input events back on (armMu held).
func (c *conn) rearmLocked() {
	if !c.quiet.Load() {
		return
	}
	c.quiet.Store(false)
	if c.dead.Load() || c.fd < 0 {
		return
	}
	ev := c.event(true)
	_ = unix.EpollCtl(c.p.epfd, unix.EPOLL_CTL_MOD, c.fd, &ev)
}

// rearmUndriven turns input events back on for the quiet connections
// nobody drives any more.
func (p *poller) rearmUndriven() {
	p.mu.Lock()
	kept := p.quiet[:0]
	var due []*conn
	for _, c := range p.quiet {
		c.armMu.Lock()
		if c.quiet.Load() && c.driven() && !c.dead.Load() {
			kept = append(kept, c)
		} else {
			c.rearmLocked()
		}
		c.armMu.Unlock()
		if c.ackDue.Load() != 0 {
			due = append(due, c)
		}
	}
	clear(p.quiet[len(kept):])
	p.quiet = kept
	p.mu.Unlock()
	for _, c := range due {
		if c.quiet.Load() {
			c.flushDueAcks()
		} else {
			c.ackTimeout() // served by the poller again: no tick to wait for
		}
	}
}

// Release implements fabric.Pumper: the driver stops reading this
// connection, so the poller serves it again from now on.
func (c *conn) Release() {
	c.drivenAt.Store(0)
	c.armMu.Lock()
	c.rearmLocked()
	c.armMu.Unlock()
	if c.ackDue.Load() != 0 {
		c.ackTimeout() // nobody will look at them before the poller's tick
	}
	if c.held.Load() {
		c.kickRead(nil, true) // the READ a Pump held (rx.go): nobody pumps now
	}
}

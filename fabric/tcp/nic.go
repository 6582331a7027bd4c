package tcp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/jakiro-kv/jakiro/fabric"
)

// errProto marks a peer that broke the protocol; the connection ends.
var errProto = errors.New("fabric/tcp: protocol error")

func protoErr(format string, args ...any) error {
	return fmt.Errorf("%w: %w: %s", fabric.ErrPeerGone, errProto, fmt.Sprintf(format, args...))
}

func (c *conn) readLoop() {
	defer c.wg.Done()
	err := c.serve()
	if !c.closed.Load() {
		c.fail(err)
	} // else Close flushes the responses, then fails the connection
	c.readerOut.Store(true)
	close(c.readerExit)
}

func (c *conn) readErr(err error) error {
	if c.closed.Load() {
		return fabric.ErrClosed
	}
	if c.dead.Load() {
		return c.err
	}
	return fmt.Errorf("%w: %v", fabric.ErrPeerGone, err)
}

// serve reads frames until the socket fails: the peer's requests (the
// NIC's work) and the responses to our own requests.
func (c *conn) serve() error {
	br := c.br
	for {
		if br.Buffered() == 0 {
			// Out of input: send what was served before blocking, so a
			// batch of requests gets one batch of responses.
			c.tryResponses()
		}
		b, err := br.Peek(1)
		if err != nil {
			return c.readErr(err)
		}
		switch b[0] {
		case frameRead, frameWrite:
			h, err := br.Peek(reqSize)
			if err != nil {
				return c.readErr(err)
			}
			typ := h[0]
			key := binary.LittleEndian.Uint32(h[4:])
			addr := binary.LittleEndian.Uint64(h[8:])
			n := binary.LittleEndian.Uint32(h[16:])
			_, _ = br.Discard(reqSize)
			if err := c.serveReq(typ, key, addr, uint64(n)); err != nil {
				return err
			}
		case frameRing:
			h, err := br.Peek(reqSize)
			if err != nil {
				return c.readErr(err)
			}
			bell := binary.LittleEndian.Uint32(h[4:])
			_, _ = br.Discard(reqSize)
			if bell < fabric.MaxDoorbells {
				_ = c.bells.RingBell(int(bell)) // nil bells: none offered
			}
		case frameResp:
			h, err := br.Peek(respSize)
			if err != nil {
				return c.readErr(err)
			}
			status := h[1]
			_, _ = br.Discard(respSize)
			if err := c.complete(status); err != nil {
				return err
			}
		default:
			return protoErr("unknown frame type %#x", b[0])
		}
	}
}

func (c *conn) kickSender() {
	if c.ntail.Load() != c.nhead.Load() {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

// serveReq is the NIC: it checks the peer's request against this domain
// and applies it, queueing the response for the sender.
func (c *conn) serveReq(typ uint8, key uint32, addr, n uint64) error {
	if n > MaxOpLen {
		return protoErr("request of %d bytes exceeds %d", n, MaxOpLen)
	}
	t := c.ntail.Load()
	for t-c.nhead.Load() > c.nmask {
		// The peer has more requests in flight than it declared (or the
		// sender lags by a hair): wait for the sender, never write here.
		c.kickSender()
		select {
		case <-c.space:
		case <-c.done:
			return c.err
		}
	}
	e := &c.nic[t&c.nmask]
	r, off := c.d.access(key, addr, n)
	if typ == frameWrite {
		if r != nil {
			if c.br.Buffered() < int(n) {
				c.tryResponses()
			}
			_, err := io.ReadFull(c.br, r.mem[off:off+n])
			r.release()
			if err != nil {
				return c.readErr(err)
			}
			*e = nicResp{status: statusOK}
		} else {
			// Skip the payload so the stream stays in step.
			if _, err := c.br.Discard(int(n)); err != nil {
				return c.readErr(err)
			}
			*e = nicResp{status: statusAccess}
		}
	} else if r != nil {
		*e = nicResp{status: statusOK, r: r, off: off, n: n}
	} else {
		*e = nicResp{status: statusAccess}
	}
	c.ntail.Store(t + 1)
	return nil
}

// complete matches a response to the oldest uncompleted op of ours.
func (c *conn) complete(status uint8) error {
	i := c.resp.Load()
	if i == c.tail.Load() {
		return protoErr("response with no request outstanding")
	}
	e := &c.ops[i&c.mask]
	switch status {
	case statusOK:
		if e.kind == fabric.OpRead && e.n > 0 {
			if _, err := io.ReadFull(c.br, e.local.mem[e.loff:e.loff+e.n]); err != nil {
				return c.readErr(err)
			}
		}
		e.err = nil
	case statusAccess:
		e.err = fabric.ErrRemoteAccess
	default:
		return protoErr("unknown response status %d", status)
	}
	e.local.release()
	e.local = nil
	c.resp.Store(i + 1)
	return nil
}

// sendLoop writes queued responses, one flush per batch.
func (c *conn) sendLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.kick:
		case <-c.done:
			c.dropResponses()
			return
		}
		if err := c.sendResponses(); err != nil {
			c.fail(c.readErr(err))
			c.dropResponses()
			return
		}
		select {
		case c.space <- struct{}{}:
		default:
		}
	}
}

// tryResponses is the reader's fast path: it sends the queued responses
// itself if the socket takes them now, and leaves the sender whatever
// would block (the write lock, a full socket, a READ payload bigger than
// the buffer's room).
func (c *conn) tryResponses() {
	h, t := c.nhead.Load(), c.ntail.Load()
	if h == t {
		return
	}
	if !c.wmu.TryLock() {
		c.kickSender()
		return
	}
	// Read the ring again under the lock: the sender may have sent some of
	// [h, t) while we waited, and sending them twice would hand the peer a
	// response it has no request for.
	h, t = c.nhead.Load(), c.ntail.Load()
	for ; h != t; h++ {
		e := &c.nic[h&c.nmask]
		if respSize+int(e.n) > c.out.room() && e.r != nil || respSize > c.out.room() {
			break
		}
		c.encodeResp(e)
	}
	c.nhead.Store(h)
	all, err := c.out.tryFlush()
	if all && err == nil {
		c.flushed.Store(h)
	}
	c.wmu.Unlock()
	if err != nil {
		c.fail(c.readErr(err))
		return
	}
	if h != t || !all {
		c.kickSender()
	}
}

// encodeResp queues e's response in the (unbounded-room) buffer; wmu held.
func (c *conn) encodeResp(e *nicResp) error {
	c.rhdr[0], c.rhdr[1] = frameResp, e.status
	err := c.out.put(c.rhdr[:])
	if err == nil && e.r != nil {
		err = c.out.put(e.r.mem[e.off : e.off+e.n])
	}
	if e.r != nil {
		e.r.release()
		e.r = nil
	}
	return err
}

// sendResponses is the sender's path: it may block on the socket.
func (c *conn) sendResponses() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	h, t := c.nhead.Load(), c.ntail.Load()
	for ; h != t; h++ {
		err := c.encodeResp(&c.nic[h&c.nmask])
		// Advance per response: its bytes may be out already, and the
		// peer may already be posting into the slot it frees.
		c.nhead.Store(h + 1)
		if err != nil {
			return err
		}
	}
	if err := c.out.flush(); err != nil {
		return err
	}
	c.flushed.Store(h)
	return nil
}

// dropResponses releases the regions of responses that will never be
// sent. The reader may still add and, in tryResponses, consume, both
// under wmu, so this takes it too.
func (c *conn) dropResponses() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	h, t := c.nhead.Load(), c.ntail.Load()
	for ; h != t; h++ {
		e := &c.nic[h&c.nmask]
		if e.r != nil {
			e.r.release()
			e.r = nil
		}
	}
	c.nhead.Store(h)
}

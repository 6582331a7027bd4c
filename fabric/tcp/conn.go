package tcp

import (
	"bufio"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"golang.org/x/sys/unix"
)

// conn is an established connection: an initiator (Post, Poll, and the
// completion half of the reader) and a NIC (the request half of the reader,
// and the sender) sharing one socket.
type conn struct {
	s        sock
	br       *bufio.Reader // owned by the reader goroutine
	d        *domain
	bells    *fabric.EventBells // acceptor side: rung by the peer's frameRing
	peerData []byte
	depth    int

	// Initiator ring. Post fills and publishes [tail..), the reader
	// completes [resp..tail), Poll drains [head..resp).
	ops  []pending
	mask uint64
	tail atomic.Uint64
	resp atomic.Uint64
	head atomic.Uint64

	// NIC response ring, sized by the peer's queue depth: the reader
	// queues [nhead..ntail) and sends what the socket takes at once; the
	// sender writes the rest. The reader never blocks on the socket's
	// write side, so two peers that both READ a lot cannot deadlock on
	// full socket buffers.
	nic     []nicResp
	nmask   uint64
	ntail   atomic.Uint64
	nhead   atomic.Uint64
	flushed atomic.Uint64 // responses before this one are on the wire
	kick    chan struct{} // reader → sender: responses queued
	space   chan struct{} // sender → reader: ring drained

	wmu  sync.Mutex // the socket's write side: Post, reader, sender
	out  outBuf
	hdr  [reqSize]byte
	rhdr [respSize]byte

	idle uint32 // Poll's empty polls in a row, with ops outstanding

	dead       atomic.Bool
	closed     atomic.Bool // Close was called: Post and Poll say ErrClosed
	err        error       // set before dead
	opErr      error       // what ops still outstanding complete with
	failOnce   sync.Once
	done       chan struct{}
	readerOut  atomic.Bool   // the reader will not touch the ring again
	readerExit chan struct{} // closed with readerOut
	wg         sync.WaitGroup
	closeOnce  sync.Once
}

type pending struct {
	id    uint64
	kind  fabric.OpKind
	local *region // referenced until completed
	loff  int
	n     int
	err   error
}

type nicResp struct {
	status uint8
	r      *region // a good READ: send r.mem[off:off+n], then release
	off    uint64
	n      uint64
}

func ceilPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

func newConn(s sock, d *domain, depth, peerDepth int, peerData []byte, bells *fabric.EventBells) *conn {
	peerDepth = max(1, min(peerDepth, maxQueueDepth))
	c := &conn{
		s:        s,
		br:       bufio.NewReaderSize(s, bufSize),
		out:      outBuf{s: s, buf: make([]byte, 0, bufSize)},
		d:        d,
		peerData: peerData,
		bells:    bells,
		depth:    depth,
		ops:      make([]pending, ceilPow2(depth)),
		nic:      make([]nicResp, ceilPow2(peerDepth)),
		kick:     make(chan struct{}, 1),
		space:    make(chan struct{}, 1),
		done:     make(chan struct{}),

		readerExit: make(chan struct{}),
	}
	c.mask = uint64(len(c.ops) - 1)
	c.nmask = uint64(len(c.nic) - 1)
	c.wg.Add(2)
	go c.readLoop()
	go c.sendLoop()
	return c
}

func (c *conn) Alloc(size int) (*fabric.Region, error) { return c.d.alloc(size) }
func (c *conn) PeerData() []byte                       { return c.peerData }
func (c *conn) Done() <-chan struct{}                  { return c.done }

func (c *conn) Err() error {
	if !c.dead.Load() {
		return nil
	}
	return c.err
}

// fail ends the connection once: the first cause wins.
func (c *conn) fail(err error) {
	c.failOnce.Do(func() {
		c.err = err
		c.opErr = fabric.ErrPeerGone
		if errors.Is(err, fabric.ErrClosed) {
			c.opErr = fabric.ErrClosed
		}
		c.dead.Store(true)
		c.s.shutdown(unix.SHUT_RDWR)
		close(c.done)
	})
}

func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		if !c.dead.Load() {
			c.drain()
		}
		c.fail(fabric.ErrClosed)
		c.wg.Wait()
		// Wait out a Post that is copying from local regions; later ones
		// see dead under wmu and touch nothing.
		c.wmu.Lock()
		c.wmu.Unlock() //nolint:staticcheck // an empty critical section is the point
		c.s.close()
		c.d.closeAll()
	})
	return nil
}

// drain acknowledges what the NIC already applied, as a NIC would: the
// application may have seen a WRITE land and closed at once. It stops
// reading, lets the reader finish its frame and the sender flush; a peer
// that does not read holds it at most closeFlushTimeout.
func (c *conn) drain() {
	deadline := time.Now().Add(closeFlushTimeout)
	c.s.setSendTimeout(closeFlushTimeout)
	c.s.shutdown(unix.SHUT_RD)
	t := time.NewTimer(closeFlushTimeout)
	defer t.Stop()
	select {
	case <-c.readerExit:
	case <-t.C:
		return
	}
	for end := c.ntail.Load(); c.flushed.Load() != end && time.Now().Before(deadline); {
		select {
		case c.kick <- struct{}{}:
		default:
		}
		time.Sleep(50 * time.Microsecond)
	}
}

func localErr(i int, format string, args ...any) error {
	return fmt.Errorf("%w: op %d: %s", fabric.ErrLocalAccess, i, fmt.Sprintf(format, args...))
}

// yieldEvery is how many empty polls in a row Poll makes before it yields
// the thread: a syscall of ~0.2µs in every 16 polls.
const yieldEvery = 16

func osYield() { _, _, _ = unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// deadErr is what Post and Poll return on a dead connection.
func (c *conn) deadErr() error {
	if c.closed.Load() {
		return fabric.ErrClosed
	}
	return c.err
}

// Post checks the whole batch, then publishes it and rings the doorbell:
// one flush of the buffered writer.
func (c *conn) Post(ops []fabric.Op) error {
	if c.dead.Load() {
		return c.deadErr()
	}
	if len(ops) == 0 {
		return nil
	}
	t := c.tail.Load()
	if int(t-c.head.Load())+len(ops) > c.depth {
		return fabric.ErrQueueFull
	}
	for i := range ops {
		op := &ops[i]
		r, err := c.checkLocal(i, op)
		if err != nil {
			c.unref(t, t+uint64(i))
			if c.dead.Load() {
				// Close freed the regions under us: that is the error.
				return c.deadErr()
			}
			return err
		}
		c.ops[(t+uint64(i))&c.mask] = pending{id: op.ID, kind: op.Kind, local: r, loff: op.LocalOff, n: op.Len}
	}
	end := t + uint64(len(ops))
	c.wmu.Lock()
	if c.dead.Load() {
		c.wmu.Unlock()
		c.unref(t, end)
		return c.deadErr()
	}
	// Publish before writing: a response may be back before Flush returns.
	c.tail.Store(end)
	var err error
	for i := range ops {
		op := &ops[i]
		if op.Kind == fabric.OpRead {
			putReq(&c.hdr, frameRead, op.Remote.Key, op.Remote.Addr+op.RemoteOff, op.Len)
			err = c.out.put(c.hdr[:])
		} else {
			putReq(&c.hdr, frameWrite, op.Remote.Key, op.Remote.Addr+op.RemoteOff, op.Len)
			err = c.out.put(c.hdr[:])
			if err == nil {
				err = c.out.put(op.Local.Bytes()[op.LocalOff : op.LocalOff+op.Len])
			}
		}
		if err != nil {
			break
		}
	}
	if err == nil {
		err = c.out.flush()
	}
	c.wmu.Unlock()
	if err != nil {
		// Posted all the same: the ops complete with the failure.
		c.fail(fmt.Errorf("%w: %v", fabric.ErrPeerGone, err))
	}
	return nil
}

func (c *conn) checkLocal(i int, op *fabric.Op) (*region, error) {
	if op.Kind != fabric.OpRead && op.Kind != fabric.OpWrite {
		return nil, localErr(i, "unknown kind %d", op.Kind)
	}
	r := c.d.local(op.Local)
	if r == nil {
		return nil, localErr(i, "region is closed or not of this connection")
	}
	if op.Len < 0 || op.Len > MaxOpLen || op.LocalOff < 0 || uint64(op.LocalOff) > r.size-uint64(op.Len) || uint64(op.Len) > r.size {
		return nil, localErr(i, "[%d, +%d) outside the %d-byte region", op.LocalOff, op.Len, r.size)
	}
	if !r.acquire() {
		return nil, localErr(i, "region is closed")
	}
	return r, nil
}

func (c *conn) unref(from, to uint64) {
	for i := from; i != to; i++ {
		e := &c.ops[i&c.mask]
		if e.local != nil {
			e.local.release()
			e.local = nil
		}
	}
}

// Poll drains completions in posting order. Once the reader has stopped,
// Poll completes what it left with the connection's failure, then reports
// the error.
func (c *conn) Poll(cs []fabric.Completion) (int, error) {
	h := c.head.Load()
	end := c.resp.Load()
	if end == h && c.readerOut.Load() && c.dead.Load() {
		// The reader is gone, so the ring's completion side is ours.
		end = c.resp.Load()
		t := c.tail.Load()
		for i := end; i != t; i++ {
			c.ops[i&c.mask].err = c.opErr
		}
		c.unref(end, t)
		c.resp.Store(t)
		end = t
		if end == h {
			return 0, c.deadErr()
		}
	}
	if end == h && end != c.tail.Load() {
		// Waiting on the reader, a thread that may need this core: the
		// software NIC shares the CPUs with the application, so give the
		// core up now and then (not blocking: sched_yield returns at once
		// when nothing else is runnable).
		if c.idle++; c.idle%yieldEvery == 0 {
			osYield()
		}
		return 0, nil
	}
	c.idle = 0
	n := 0
	for h != end && n < len(cs) {
		e := &c.ops[h&c.mask]
		cs[n] = fabric.Completion{ID: e.id, Kind: e.kind, Err: e.err}
		h++
		n++
	}
	c.head.Store(h)
	return n, nil
}

// RingBell implements fabric.Ringer: a frame the peer's NIC turns into a
// ring of its listener's doorbell.
func (c *conn) RingBell(i int) error {
	if c.closed.Load() {
		return fabric.ErrClosed
	}
	if c.dead.Load() {
		return c.opErrOrGone()
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	var h [reqSize]byte
	putReq(&h, frameRing, uint32(i), 0, 0)
	if err := c.out.put(h[:]); err != nil {
		return err
	}
	return c.out.flush()
}

func (c *conn) opErrOrGone() error {
	if c.err != nil {
		return c.err
	}
	return fabric.ErrPeerGone
}

//go:build rdma

package verbs

/*
#include <errno.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"log"
	"math/bits"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/internal/eventbell"
)

const (
	// bellRecvs is how many zero-length receives each accepted connection
	// of a listener with doorbells keeps posted. A peer that rings faster
	// than the listener re-posts gets RNR NAKs and retries (rnr_retry 7).
	bellRecvs = 32
	// ringSlots bounds a dialer's rings whose completions Poll has not
	// reaped yet; its SQ and CQ have that much room on top of QueueDepth.
	ringSlots = 16
	// minRNRTimer is the back-off (IB encoding: 6 = 80 µs) a ringing peer
	// waits after an RNR NAK. rdma_cm leaves it at 0, which means 655 ms.
	minRNRTimer = 6
	// drainEvents bounds the CQ events one cgo drain call handles, so
	// bells are rung promptly under a flood of rings.
	drainEvents = 64
	// bellMagic marks the bell count at the end of the acceptor's private
	// data (see encodeAcceptData).
	bellMagic = 0xB7
)

// bellHub is a listener's doorbells: fabric.EventBells (what WaitBell
// waits on) rung by one goroutine per device, which drains the receive CQs
// of the listener's accepted connections through one completion channel
// (waited on in the Go netpoller, not in C). Accepted connections hold
// references, so the channels outlive the listener as long as they do.
type bellHub struct {
	n  int
	ev *eventbell.Set

	// mu is held while a drain runs and while a connection destroys its
	// QP and receive CQ, so a drain never touches freed verbs objects.
	mu    sync.Mutex
	refs  int
	chans []*compChan
	wg    sync.WaitGroup

	// received counts rings whose bells have been rung (tests compare it
	// with the rings dialers posted to know none is still in flight).
	received atomic.Uint64
	// draining is 1 from a drain's start until its bells are rung.
	draining atomic.Int32
}

// compChan is one device's completion channel, read through a dup of its
// non-blocking fd wrapped in an os.File.
type compChan struct {
	ctx *C.struct_ibv_context
	b   *C.jk_bellchan
	f   *os.File
	rc  syscall.RawConn
}

func newBellHub(n int) (*bellHub, error) {
	if n > fabric.MaxDoorbells {
		return nil, fmt.Errorf("verbs: %d doorbells, at most %d", n, fabric.MaxDoorbells)
	}
	ev, err := eventbell.New(n)
	if err != nil {
		return nil, err
	}
	return &bellHub{n: n, ev: ev, refs: 1}, nil
}

func (h *bellHub) releaseIfAny() {
	if h != nil {
		h.release()
	}
}

func (h *bellHub) acquire() {
	h.mu.Lock()
	h.refs++
	h.mu.Unlock()
}

// release drops a reference; the last one stops the goroutines and frees
// the channels (their CQs are gone by then) and the eventfds.
func (h *bellHub) release() {
	h.mu.Lock()
	h.refs--
	last := h.refs == 0
	chans := h.chans
	if last {
		h.chans = nil
	}
	h.mu.Unlock()
	if !last {
		return
	}
	for _, cc := range chans {
		cc.f.Close()
	}
	h.wg.Wait()
	for _, cc := range chans {
		C.jk_bellchan_free(cc.b)
	}
	h.ev.Close()
}

// newCQ makes an armed receive CQ on the channel of ctx (creating that
// channel and its goroutine on first use).
func (h *bellHub) newCQ(ctx *C.struct_ibv_context, cqe int) (*C.struct_ibv_cq, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var cc *compChan
	for _, c := range h.chans {
		if c.ctx == ctx {
			cc = c
		}
	}
	if cc == nil {
		b, err := C.jk_bellchan_new(ctx)
		if b == nil {
			return nil, fmt.Errorf("verbs: ibv_create_comp_channel: %v", err)
		}
		dup, err := syscall.Dup(int(C.jk_bellchan_fd(b)))
		if err != nil {
			C.jk_bellchan_free(b)
			return nil, fmt.Errorf("verbs: completion channel: %w", err)
		}
		f := os.NewFile(uintptr(dup), "ibv_comp_channel")
		rc, err := f.SyscallConn()
		if err != nil {
			f.Close()
			C.jk_bellchan_free(b)
			return nil, fmt.Errorf("verbs: completion channel: %w", err)
		}
		cc = &compChan{ctx: ctx, b: b, f: f, rc: rc}
		h.chans = append(h.chans, cc)
		h.wg.Add(1)
		go h.serve(cc)
	}
	cq, err := C.jk_bell_cq(ctx, cc.b, C.int(cqe))
	if cq == nil {
		return nil, fmt.Errorf("verbs: ibv_create_cq(%d) for doorbells: %v", cqe, err)
	}
	return cq, nil
}

// attach points rcq at qp and posts the receives.
func (h *bellHub) attach(rcq *C.struct_ibv_cq, qp *C.struct_ibv_qp) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if rc := C.jk_bell_attach(rcq, qp, bellRecvs); rc != 0 {
		return errnoErr("ibv_post_recv", rc)
	}
	return nil
}

// serve waits for CQ events of cc in the netpoller and rings the bells
// their immediates name, until release closes cc.f.
func (h *bellHub) serve(cc *compChan) {
	defer h.wg.Done()
	var rung [C.JK_BELL_BITS / 64]uint64
	var failed error
	var recvd uint64
	cc.rc.Read(func(uintptr) bool {
		for {
			h.draining.Add(1)
			h.mu.Lock()
			rv := C.jk_bell_drain(cc.b, drainEvents)
			for i := range rung {
				rung[i] = uint64(cc.b.rung[i])
			}
			now := uint64(cc.b.recvd)
			h.mu.Unlock()
			for w, word := range rung {
				for b := word; b != 0; b &= b - 1 {
					if i := w*64 + bits.TrailingZeros64(b); i < h.n {
						h.ev.RingBell(i)
					}
				}
			}
			h.received.Add(now - recvd)
			recvd = now
			h.draining.Add(-1)
			if rv < 0 {
				failed = syscall.Errno(-rv)
				return true
			}
			if rv == 0 {
				return false // drained: wait for the next event
			}
		}
	})
	if failed != nil {
		log.Printf("verbs: doorbells stopped: ibv_get_cq_event: %v", failed)
	}
}

// encodeAcceptData frames the acceptor's data as [len][data], and, when it
// offers bells, appends their count at the end of the 196 bytes the REP
// carries: [bellMagic][n lo][n hi]. Older dialers ignore the tail.
func encodeAcceptData(data []byte, bells int) []byte {
	var pd [repDataSize]byte
	pd[0] = byte(len(data))
	copy(pd[1:], data)
	if bells <= 0 {
		return pd[:1+len(data)]
	}
	pd[repDataSize-3] = bellMagic
	pd[repDataSize-2] = byte(bells)
	pd[repDataSize-1] = byte(bells >> 8)
	return pd[:]
}

// bellsOffered reads the bell count encodeAcceptData appended (0 if none).
func bellsOffered(pd []byte) int {
	if len(pd) < repDataSize || pd[repDataSize-3] != bellMagic {
		return 0
	}
	return min(int(pd[repDataSize-2])|int(pd[repDataSize-1])<<8, fabric.MaxDoorbells)
}

// bellListener is a listener built with Options.Doorbells > 0: only it
// implements fabric.Doorbells, so callers that type-assert see bells only
// where they exist.
type bellListener struct {
	*listener
}

// WaitBell implements fabric.Doorbells.
func (l bellListener) WaitBell(i int, d time.Duration) (bool, error) {
	return l.hub.ev.WaitBell(i, d)
}

// RingBell implements fabric.Doorbells: rings bell i locally.
func (l bellListener) RingBell(i int) error { return l.hub.ev.RingBell(i) }

// ringConn is a dialer's connection to a listener that offers bells: only
// it implements fabric.Ringer.
type ringConn struct {
	*conn
}

// RingBell implements fabric.Ringer: a zero-length SEND_WITH_IMM carrying
// i, which the acceptor's drain turns into a ring of its bell i. Bells the
// acceptor does not offer are ignored here (and there). Each ring is
// signaled and its completion is reaped (and hidden) by Poll; with
// ringSlots rings unreaped, RingBell fails with fabric.ErrQueueFull. It may
// be called concurrently with Post and Poll.
func (c ringConn) RingBell(i int) error {
	if i < 0 || i >= c.peerBells {
		return nil
	}
	return c.postRing(uint32(i))
}

// postRing posts a ring of bell i, unchecked (tests use it to send bells the
// peer does not offer).
func (c *conn) postRing(i uint32) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return fabric.ErrClosed
	}
	if err := c.Err(); err != nil {
		return err
	}
	if c.ringsOut.Add(1) > ringSlots {
		c.ringsOut.Add(-1)
		return fabric.ErrQueueFull
	}
	inl := C.int(0)
	if c.maxInline > 0 {
		inl = 1
	}
	if rc := C.jk_ring_bell(c.qp(), C.uint32_t(i), inl); rc != 0 {
		c.ringsOut.Add(-1)
		err := fmt.Errorf("%w: ibv_post_send (doorbell): %v", fabric.ErrPeerGone, syscall.Errno(rc))
		c.fail(err)
		return err
	}
	c.ringsPosted.Add(1)
	return nil
}

// setMinRNR shortens the RNR back-off of an accepted connection with bells.
func (c *conn) setMinRNR() {
	if rc := C.jk_set_min_rnr(c.qp(), minRNRTimer); rc != 0 {
		rnrOnce.Do(func() {
			log.Printf("verbs: cannot shorten the RNR timer (%v): a flood of doorbell rings may stall its sender for 655 ms", syscall.Errno(rc))
		})
	}
}

var rnrOnce sync.Once

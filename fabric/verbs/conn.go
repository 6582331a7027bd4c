//go:build rdma

package verbs

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/jakiro-kv/jakiro/fabric"
)

// connTags tells connections apart in Region handles (tag<<32 | index), so
// Post can refuse another connection's region without a map lookup.
var connTags atomic.Uint32

// conn is one rdma_cm id with its own PD, CQ and RC QP. It is the Conn;
// setup wraps it before the handshake.
type conn struct {
	tag    uint32
	dialer bool
	opts   fabric.Options
	ev     *evChan
	id     *C.struct_rdma_cm_id

	// set by initVerbs, freed by Close
	pd        *C.struct_ibv_pd
	cq        *C.struct_ibv_cq
	ring      *C.jk_ring
	jops      []C.jk_op         // ring.ops as a Go slice (C memory)
	wcs       []C.struct_ibv_wc // ring.wc as a Go slice (C memory)
	hasQP     bool
	uqp       *C.struct_ibv_qp // a prepared QP rdma_cm does not own (ready.go); nil: id.qp
	maxInline int

	// doorbells
	hub         *bellHub         // acceptor of a listener with bells; holds a reference
	rcq         *C.struct_ibv_cq // acceptor with bells: receive CQ on the hub's channel
	peerBells   int              // dialer: bells the acceptor offers
	ringsOut    atomic.Int32     // dialer: rings whose completion Poll has not reaped
	ringsPosted atomic.Uint64    // dialer: rings posted in all

	initDepth, respRes uint8 // RDMA READ credits for the handshake
	peerData           []byte

	// mu: Post, Poll and Alloc hold it shared; Close and Region.Close
	// exclusively, so resources are never freed under a running op.
	mu         sync.RWMutex
	closed     bool
	regs       []*region
	domainUsed int64

	setupEv     chan event
	watchDone   chan struct{}
	established atomic.Bool
	accepted    atomic.Bool // acceptor: rdma_accept was called
	closing     atomic.Bool
	closeOnce   sync.Once
	done        chan struct{}
	failOnce    sync.Once
	err         atomic.Pointer[error]

	sq sendQueue
}

func newConn(ev *evChan, id *C.struct_rdma_cm_id, o fabric.Options, dialer bool) *conn {
	c := &conn{
		tag:       connTags.Add(1),
		dialer:    dialer,
		opts:      o,
		ev:        ev,
		id:        id,
		setupEv:   make(chan event, 8),
		watchDone: make(chan struct{}),
		done:      make(chan struct{}),
	}
	go c.watch()
	return c
}

// watch handles the connection's rdma_cm events until the channel stops.
func (c *conn) watch() {
	defer close(c.watchDone)
	for {
		ev, err := c.ev.next()
		if err != nil {
			return
		}
		switch ev.typ {
		case C.RDMA_CM_EVENT_DISCONNECTED, C.RDMA_CM_EVENT_DEVICE_REMOVAL:
			if c.closing.Load() {
				c.fail(fabric.ErrClosed)
			} else {
				c.fail(fabric.ErrPeerGone)
			}
			// Moves the QP to the error state, so outstanding WRs are
			// flushed (and answers the peer's DREQ).
			c.disconnect()
			if !c.established.Load() {
				c.forward(ev)
			}
		case C.RDMA_CM_EVENT_TIMEWAIT_EXIT:
		default:
			c.forward(ev)
		}
	}
}

func (c *conn) forward(ev event) {
	select {
	case c.setupEv <- ev:
	default: // nobody is waiting for that many events: a stray, drop it
	}
}

// fail ends the connection with err (the first reason wins).
func (c *conn) fail(err error) {
	c.failOnce.Do(func() {
		c.err.Store(&err)
		close(c.done)
	})
}

// waitEvent waits for the handshake event want; any other event is an error.
func (c *conn) waitEvent(ctx context.Context, want C.int) (event, error) {
	select {
	case ev := <-c.setupEv:
		if ev.typ == want {
			return ev, nil
		}
		switch ev.typ {
		case C.RDMA_CM_EVENT_REJECTED:
			if ev.status == 28 { // IB_CM_REJ_CONSUMER_DEFINED: the acceptor said no
				return ev, fabric.ErrRejected
			}
			return ev, fmt.Errorf("verbs: connection refused (CM reject reason %d; nothing listening?)", ev.status)
		case C.RDMA_CM_EVENT_DISCONNECTED, C.RDMA_CM_EVENT_DEVICE_REMOVAL:
			return ev, fabric.ErrPeerGone
		}
		return ev, fmt.Errorf("verbs: %s (status %d), waiting for %s", ev, ev.status, eventName(want))
	case <-c.watchDone:
		return event{}, fabric.ErrClosed
	case <-ctx.Done():
		return event{}, ctx.Err()
	}
}

// initVerbs gives the connection its PD, CQ and QP on its resolved device:
// made here, or prepared (adopt) and only moved to INIT for this request.
func (c *conn) initVerbs() error {
	depth := c.opts.QueueDepth
	if c.uqp == nil {
		if err := c.makeVerbs(depth); err != nil {
			return err
		}
	} else if rc := C.jk_qp_init(c.id, c.uqp); rc != 0 {
		return errnoErr("ibv_modify_qp(INIT) of a prepared QP", rc)
	}
	c.jops = unsafe.Slice(c.ring.ops, depth)
	c.wcs = unsafe.Slice(c.ring.wc, depth)
	if c.hub != nil {
		if err := c.hub.attach(c.rcq, c.qp()); err != nil {
			return err
		}
	}
	c.sq.init(depth)
	return nil
}

// makeVerbs creates the PD, CQs, ring and rdma_cm's QP.
func (c *conn) makeVerbs(depth int) error {
	sendDepth, cqSize := depth, 2*depth
	if c.dialer { // room for rings (see ringConn)
		sendDepth += ringSlots
		cqSize += ringSlots
	}
	var err error
	if c.pd, c.cq, c.rcq, c.ring, err = makeQueues(c.id.verbs, depth, cqSize, c.hub); err != nil {
		return err // Close frees what was made
	}
	rcq, recvDepth := c.cq, 1
	if c.rcq != nil {
		rcq, recvDepth = c.rcq, bellRecvs
	}
	var inl C.int
	if rc := C.jk_create_qp(c.id, c.pd, c.cq, rcq, C.int(sendDepth), C.int(recvDepth), &inl); rc != 0 {
		return errnoErr(fmt.Sprintf("rdma_create_qp(depth %d)", depth), rc)
	}
	c.hasQP = true
	c.maxInline = int(inl)
	return nil
}

// makeQueues makes a connection's PD, its CQ of cqSize entries, its ring
// of depth ops and, with bells (hub), its receive CQ on the hub's channel.
// On error what it made is returned too, for the caller to free.
func makeQueues(ctx *C.struct_ibv_context, depth, cqSize int, hub *bellHub) (pd *C.struct_ibv_pd, cq, rcq *C.struct_ibv_cq, ring *C.jk_ring, err error) {
	if pd, err = C.ibv_alloc_pd(ctx); pd == nil {
		return pd, cq, rcq, ring, fmt.Errorf("verbs: ibv_alloc_pd: %v", err)
	}
	if cq, err = C.ibv_create_cq(ctx, C.int(cqSize), nil, nil, 0); cq == nil {
		return pd, cq, rcq, ring, fmt.Errorf("verbs: ibv_create_cq(%d): %v", cqSize, err)
	}
	if ring = C.jk_ring_new(C.int(depth)); ring == nil {
		return pd, cq, rcq, ring, fmt.Errorf("verbs: out of C memory for a ring of %d", depth)
	}
	if hub != nil {
		if rcq, err = hub.newCQ(ctx, bellRecvs); err != nil {
			return pd, cq, rcq, ring, err
		}
	}
	return pd, cq, rcq, ring, nil
}

// adopt takes prepared resources (ready.go) over for good, with the bell
// hub's reference they hold.
func (c *conn) adopt(p *prepared) {
	c.pd, c.cq, c.ring, c.rcq, c.uqp, c.maxInline = p.pd, p.cq, p.ring, p.rcq, p.qp, p.maxInline
	c.hasQP = p.qp != nil
	if p.hub != nil {
		c.hub = p.hub
	}
}

// disconnect starts the disconnection; a QP rdma_cm does not own is moved
// to the error state here, as rdma_disconnect does for its own, so that
// outstanding work requests are flushed.
func (c *conn) disconnect() {
	if c.uqp != nil {
		C.jk_qp_err(c.uqp)
	}
	C.rdma_disconnect(c.id)
}

// destroyQP frees the QP, rdma_cm's or a prepared one.
func (c *conn) destroyQP() {
	if c.uqp != nil {
		C.ibv_destroy_qp(c.uqp)
		return
	}
	C.rdma_destroy_qp(c.id)
}

func (c *conn) PeerData() []byte { return c.peerData }

func (c *conn) Done() <-chan struct{} { return c.done }

func (c *conn) Err() error {
	if p := c.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Close disconnects (bounded wait), then frees regions, QP, receive CQ of
// doorbells, CQ, PD, id and event channel, in that order.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		c.closing.Store(true)
		if c.established.Load() {
			c.disconnect()
			select {
			case <-c.done:
			case <-time.After(2 * time.Second):
			}
		} else if !c.dialer && !c.accepted.Load() {
			C.rdma_reject(c.id, nil, 0)
		}
		c.fail(fabric.ErrClosed)
		c.mu.Lock()
		c.closed = true
		regs := c.regs
		c.mu.Unlock()
		for _, r := range regs {
			if r != nil {
				r.fr.Close()
			}
		}
		c.ev.stop()
		<-c.watchDone
		if c.hub != nil {
			// Under the hub's lock: its drain must not see them half gone.
			c.hub.mu.Lock()
			if c.hasQP {
				c.destroyQP()
			}
			if c.rcq != nil {
				C.ibv_destroy_cq(c.rcq)
			}
			c.hub.mu.Unlock()
			c.hub.release()
		} else if c.hasQP {
			c.destroyQP()
		}
		if c.cq != nil {
			C.ibv_destroy_cq(c.cq)
		}
		if c.pd != nil {
			C.ibv_dealloc_pd(c.pd)
		}
		C.rdma_destroy_id(c.id)
		c.ev.destroy()
		C.jk_ring_free(c.ring)
		c.ring, c.jops, c.wcs = nil, nil, nil
	})
	return nil
}

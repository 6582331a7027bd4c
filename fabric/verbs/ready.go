//go:build rdma

package verbs

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/jakiro-kv/jakiro/fabric/internal/readypool"
)

// prepared is what an acceptor's connection needs, made before anyone
// dials (fabric.Options.Ready): its event channel, protection domain,
// completion queues, ring of ops and RC QP. Each goes to one connection
// and is never reused, so a client gets a PD and QP of its own, as on the
// join path. The QP is outside rdma_cm (no request's id exists yet): the
// connection drives its states itself (jk_qp_init, jk_accept_qp,
// jk_qp_err), with the attributes rdma_cm gives the request.
type prepared struct {
	ev        *evChan
	pd        *C.struct_ibv_pd
	cq        *C.struct_ibv_cq
	ring      *C.jk_ring
	hub       *bellHub         // the listener's, with bells: holds a reference
	rcq       *C.struct_ibv_cq // with bells: the receive CQ on the hub's channel
	qp        *C.struct_ibv_qp
	maxInline int
}

func prepare(ctx *C.struct_ibv_context, depth int, hub *bellHub) (*prepared, error) {
	ev, err := newEvChan()
	if err != nil {
		return nil, err
	}
	p := &prepared{ev: ev}
	if hub != nil {
		hub.acquire() // the connection inherits it (conn.adopt); free drops it
		p.hub = hub
	}
	if p.pd, p.cq, p.rcq, p.ring, err = makeQueues(ctx, depth, 2*depth, hub); err != nil {
		p.free()
		return nil, err
	}
	rcq, recvDepth := p.cq, 1
	if p.rcq != nil {
		rcq, recvDepth = p.rcq, bellRecvs
	}
	var inl C.int
	if p.qp, err = C.jk_qp_new(p.pd, p.cq, rcq, C.int(depth), C.int(recvDepth), &inl); p.qp == nil {
		p.free()
		return nil, fmt.Errorf("verbs: ibv_create_qp(depth %d): %v", depth, err)
	}
	p.maxInline = int(inl)
	return p, nil
}

// free releases what nobody took.
func (p *prepared) free() {
	if p.qp != nil {
		C.ibv_destroy_qp(p.qp)
	}
	if p.hub != nil {
		p.hub.mu.Lock() // its drain must not see the CQ half gone
		if p.rcq != nil {
			C.ibv_destroy_cq(p.rcq)
		}
		p.hub.mu.Unlock()
		p.hub.release()
	}
	if p.ring != nil {
		C.jk_ring_free(p.ring)
	}
	if p.cq != nil {
		C.ibv_destroy_cq(p.cq)
	}
	if p.pd != nil {
		C.ibv_dealloc_pd(p.pd)
	}
	p.ev.stop()
	p.ev.destroy()
}

// newReadyPool keeps prepared resources for the listener's device
// (readypool: up to Options.Ready, made at the lowest CPU priority); per
// entry one event channel, one PD, one CQ of 2 x QueueDepth entries (and a
// receive CQ for bells), a ring of QueueDepth ops and a QP.
func newReadyPool(ctx *C.struct_ibv_context, n, depth int, hub *bellHub) *readypool.Pool[*prepared] {
	return readypool.New(readypool.Config[*prepared]{
		Size: n,
		Make: func() (*prepared, error) { return prepare(ctx, depth, hub) },
		Free: (*prepared).free,
		Idle: true,
	})
}

// devAttrs caches each device's RDMA READ credits (ibv_query_device, a
// system call a join would otherwise make on each side).
var devAttrs sync.Map // uintptr(ctx) -> [2]C.int

func rdAtom(ctx *C.struct_ibv_context) (ini, resp C.int, err error) {
	k := uintptr(unsafe.Pointer(ctx))
	if v, ok := devAttrs.Load(k); ok {
		a := v.([2]C.int)
		return a[0], a[1], nil
	}
	if rc := C.jk_rd_atom(ctx, &ini, &resp); rc != 0 {
		return 0, 0, errnoErr("ibv_query_device", rc)
	}
	devAttrs.Store(k, [2]C.int{ini, resp})
	return ini, resp, nil
}

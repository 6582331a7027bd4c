//go:build rdma

package verbs

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/jakiro-kv/jakiro/fabric"
)

// sendQueue tracks posted ops by sequence number (= wr_id). Ops in
// [delivered, done) have their result and wait for Poll; ops in
// [done, posted) are on the NIC. A signaled completion for seq s completes
// every op up to s: in RC, WRs complete in order.
type sendQueue struct {
	pend        []pendOp // ring, indexed by seq % len
	posted      uint64
	done        uint64
	delivered   uint64
	signalEvery int
	sinceSignal int
	qpErr       error // first failed completion
	flushErr    error // what the ops flushed after it report (wraps qpErr)
}

type pendOp struct {
	id   uint64
	kind fabric.OpKind
	err  error
}

func (q *sendQueue) init(depth int) {
	q.pend = make([]pendOp, depth)
	q.signalEvery = max(1, depth/4)
}

func (q *sendQueue) slot(seq uint64) *pendOp { return &q.pend[seq%uint64(len(q.pend))] }

// Post checks the whole batch, fills the C op array and posts it with one
// doorbell. On a check failure nothing is posted.
func (c *conn) Post(ops []fabric.Op) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return fabric.ErrClosed
	}
	if err := c.Err(); err != nil {
		return err
	}
	q := &c.sq
	n := len(ops)
	if n == 0 {
		return nil
	}
	if uint64(n)+q.posted-q.delivered > uint64(len(q.pend)) {
		return fabric.ErrQueueFull
	}
	since := q.sinceSignal
	for i := range ops {
		op := &ops[i]
		r := op.Local
		var idx int
		owned := false
		if r != nil {
			h := r.Handle()
			idx = int(uint32(h))
			owned = uint32(h>>32) == c.tag && idx < len(c.regs) && c.regs[idx].live && c.regs[idx].fr == r
		}
		if err := fabric.CheckOp(i, op, owned); err != nil {
			return err
		}
		if op.Len > 1<<31 {
			return fmt.Errorf("%w: op %d: %d bytes, at most 2 GiB in one op", fabric.ErrLocalAccess, i, op.Len)
		}
		reg := c.regs[idx]
		jo := &c.jops[i]
		switch op.Kind {
		case fabric.OpRead:
			jo.opcode = C.JK_READ
			jo.flags = 0
		case fabric.OpWrite:
			jo.opcode = C.JK_WRITE
			jo.flags = 0
			if op.Len > 0 && op.Len <= c.maxInline {
				jo.flags = C.JK_INLINE
			}
		}
		seq := q.posted + uint64(i)
		since++
		if i == n-1 || since >= q.signalEvery {
			jo.flags |= C.JK_SIGNALED
			since = 0
		}
		jo.laddr = C.uint64_t(reg.base + uint64(op.LocalOff))
		jo.len = C.uint32_t(op.Len)
		jo.lkey = C.uint32_t(reg.lkey)
		jo.raddr = C.uint64_t(op.Remote.Addr + op.RemoteOff)
		jo.rkey = C.uint32_t(op.Remote.Key)
		jo.wr_id = C.uint64_t(seq)
		*q.slot(seq) = pendOp{id: op.ID, kind: op.Kind}
	}
	if rc := C.jk_post(c.qp(), c.ring, C.int(n)); rc != 0 {
		// Only a broken QP refuses WRs we have room for. The accepted
		// prefix stays tracked; the connection is dead, so Poll reports
		// it with this error.
		err := fmt.Errorf("%w: ibv_post_send: %v", fabric.ErrPeerGone, syscall.Errno(rc))
		q.posted += uint64(c.ring.posted)
		c.fail(err)
		return err
	}
	q.posted += uint64(n)
	q.sinceSignal = since
	return nil
}

func (c *conn) qp() *C.struct_ibv_qp {
	if c.uqp != nil {
		return c.uqp
	}
	return c.id.qp
}

// Poll delivers finished ops in posting order, reaping the CQ (one
// ibv_poll_cq for up to len(cs) entries) when nothing is ready.
func (c *conn) Poll(cs []fabric.Completion) (int, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return 0, fabric.ErrClosed
	}
	q := &c.sq
	n := q.deliver(cs)
	if n == len(cs) {
		return n, nil
	}
	if q.done < q.posted || c.ringsOut.Load() > 0 {
		dead := c.Err() // before the CQ poll: a flush that raced is then still seen
		want := min(len(cs)-n, len(c.wcs))
		got := int(C.jk_poll(c.cq, c.ring, C.int(want)))
		if got < 0 {
			c.fail(fmt.Errorf("%w: ibv_poll_cq failed", fabric.ErrPeerGone))
			dead = c.Err()
			got = 0
		}
		for i := 0; i < got; i++ {
			wc := &c.wcs[i]
			if uint64(wc.wr_id)&C.JK_RING_WRID != 0 {
				// A doorbell ring: no Completion; it frees its slot.
				c.ringsOut.Add(-1)
				q.ringFailed(wc.status)
				continue
			}
			q.complete(uint64(wc.wr_id), wc.status, dead)
		}
		if q.qpErr != nil && dead == nil && errors.Is(q.qpErr, fabric.ErrPeerGone) {
			// Transport retries exhausted: the peer's host or the path
			// died without a CM disconnect; end the connection here.
			c.fail(q.qpErr)
		}
		if got == 0 && dead != nil {
			// Dead connection, CQ drained: whatever is left will never
			// complete on its own.
			for q.done < q.posted {
				q.slot(q.done).err = dead
				q.done++
			}
		}
		n += q.deliver(cs[n:])
	}
	if n == 0 && q.done == q.posted {
		if err := c.Err(); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// complete records the completion of seq and, in order, of the unsignaled
// ops before it.
func (q *sendQueue) complete(seq uint64, status uint32, dead error) {
	if seq < q.done || seq >= q.posted {
		return // flush of an op already reported
	}
	err := statusErr(status)
	if status == C.IBV_WC_WR_FLUSH_ERR {
		switch {
		case q.qpErr != nil:
			err = q.flushErr
		case dead != nil:
			err = dead
		default:
			err = fabric.ErrPeerGone
		}
	}
	// Earlier unsignaled ops succeeded, unless the QP already failed.
	for ; q.done < seq; q.done++ {
		q.slot(q.done).err = q.flushErr
	}
	q.slot(seq).err = err
	q.done = seq + 1
	if err != nil && q.qpErr == nil {
		q.qpErr = err
		q.flushErr = fmt.Errorf("%w; flushed: the queue pair failed on an earlier op", err)
	}
}

// ringFailed records the failure of a ring (not its flush) as the QP's
// error, which the ops flushed after it then report.
func (q *sendQueue) ringFailed(status uint32) {
	if status == C.IBV_WC_SUCCESS || status == C.IBV_WC_WR_FLUSH_ERR || q.qpErr != nil {
		return
	}
	q.qpErr = statusErr(status)
	q.flushErr = fmt.Errorf("%w; flushed: the queue pair failed on a doorbell ring", q.qpErr)
}

func (q *sendQueue) deliver(cs []fabric.Completion) int {
	n := 0
	for n < len(cs) && q.delivered < q.done {
		p := q.slot(q.delivered)
		cs[n] = fabric.Completion{ID: p.id, Kind: p.kind, Err: p.err}
		p.err = nil
		q.delivered++
		n++
	}
	return n
}

// wcErrs maps WC statuses to fabric errors, built once so the poll path
// does not allocate.
var wcErrs = func() map[uint32]error {
	m := map[uint32]error{}
	wrap := func(base error, s C.enum_ibv_wc_status) {
		m[uint32(s)] = fmt.Errorf("%w (%s)", base, C.GoString(C.ibv_wc_status_str(s)))
	}
	for _, s := range []C.enum_ibv_wc_status{C.IBV_WC_REM_ACCESS_ERR, C.IBV_WC_REM_INV_REQ_ERR, C.IBV_WC_REM_OP_ERR} {
		wrap(fabric.ErrRemoteAccess, s)
	}
	for _, s := range []C.enum_ibv_wc_status{C.IBV_WC_LOC_LEN_ERR, C.IBV_WC_LOC_PROT_ERR, C.IBV_WC_LOC_ACCESS_ERR, C.IBV_WC_LOC_QP_OP_ERR} {
		wrap(fabric.ErrLocalAccess, s)
	}
	return m
}()

func statusErr(s uint32) error {
	if s == C.IBV_WC_SUCCESS {
		return nil
	}
	if err, ok := wcErrs[s]; ok {
		return err
	}
	// Retries exceeded, remote aborted, fatal, ...: the peer or the path
	// is gone.
	return peerGoneErrs[s%uint32(len(peerGoneErrs))]
}

var peerGoneErrs = func() (e [32]error) {
	for i := range e {
		e[i] = fmt.Errorf("%w (%s)", fabric.ErrPeerGone, C.GoString(C.ibv_wc_status_str(C.enum_ibv_wc_status(i))))
	}
	return
}()

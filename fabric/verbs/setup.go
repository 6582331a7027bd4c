//go:build rdma

package verbs

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/jakiro-kv/jakiro/fabric"
)

// Sizes rdma_cm delivers (zero-padded) over IB/RoCE for RDMA_PS_TCP: the IB
// CM REQ carries 92 bytes, 36 of them rdma_cm's header; the REP carries 196.
const (
	reqDataSize = 56
	repDataSize = 196
)

// setup is a conn before its handshake; after Establish, Close is a no-op.
type setup struct {
	c    *conn
	done atomic.Bool
}

func (s *setup) Alloc(size int) (*fabric.Region, error) { return s.c.Alloc(size) }

func (s *setup) PeerData() []byte {
	if s.c.dialer {
		return nil
	}
	return s.c.peerData
}

func (s *setup) Close() error {
	if s.done.Load() {
		return nil
	}
	return s.c.Close()
}

func (s *setup) Establish(ctx context.Context, data []byte) (fabric.Conn, error) {
	if s.done.Load() {
		return nil, fmt.Errorf("verbs: Establish called twice")
	}
	c := s.c
	if err := fabric.CheckPrivateData(data, c.dialer); err != nil {
		return nil, err
	}
	var rc C.int
	if c.dialer {
		pd, flow := encodeDialData(data)
		rc = C.jk_connect(c.id, unsafe.Pointer(&pd[0]), C.int(len(pd)), C.int(flow), C.int(c.initDepth), C.int(c.respRes))
	} else {
		nb := 0
		if c.hub != nil {
			nb = c.hub.n
		}
		pd := encodeAcceptData(data, nb)
		c.accepted.Store(true)
		if c.uqp != nil { // prepared: its states are ours to drive
			rnr := -1
			if c.hub != nil {
				rnr = minRNRTimer // set where IB allows it, at RTR (setMinRNR)
			}
			rc = C.jk_accept_qp(c.id, c.uqp, unsafe.Pointer(&pd[0]), C.int(len(pd)), C.int(c.initDepth), C.int(c.respRes), C.int(rnr))
		} else {
			rc = C.jk_accept(c.id, unsafe.Pointer(&pd[0]), C.int(len(pd)), C.int(c.initDepth), C.int(c.respRes))
		}
	}
	if rc != 0 {
		c.Close()
		return nil, errnoErr("connect/accept", rc)
	}
	ev, err := c.waitEvent(ctx, C.RDMA_CM_EVENT_ESTABLISHED)
	if err != nil {
		c.Close()
		return nil, err
	}
	if c.dialer {
		if c.peerData, err = decodeAcceptData(ev.data); err != nil {
			c.Close()
			return nil, err
		}
		c.peerBells = bellsOffered(ev.data)
	} else if c.hub != nil && c.uqp == nil {
		c.setMinRNR() // a prepared QP got it at RTR
	}
	c.established.Store(true)
	s.done.Store(true)
	if c.peerBells > 0 {
		return ringConn{c}, nil
	}
	return c, nil
}

// encodeDialData frames the dialer's data so the acceptor can recover its
// exact length from the zero-padded 56 bytes: [len][data] for up to 55
// bytes, or the raw 56 bytes flagged with the CM flow-control bit.
func encodeDialData(data []byte) (pd []byte, flow int) {
	if len(data) == reqDataSize {
		return append([]byte(nil), data...), 1
	}
	pd = make([]byte, 1+len(data))
	pd[0] = byte(len(data))
	copy(pd[1:], data)
	return pd, 0
}

func decodeDialData(pd []byte, flow bool) ([]byte, error) {
	if flow {
		if len(pd) < reqDataSize {
			return nil, fmt.Errorf("verbs: dial data: %d bytes arrived, want %d", len(pd), reqDataSize)
		}
		return pd[:reqDataSize], nil
	}
	if len(pd) < 1 || int(pd[0]) > len(pd)-1 || int(pd[0]) > fabric.MaxDialData {
		return nil, fmt.Errorf("verbs: dial data: malformed frame (%d bytes)", len(pd))
	}
	return pd[1 : 1+int(pd[0])], nil
}

func decodeAcceptData(pd []byte) ([]byte, error) {
	if len(pd) < 1 || int(pd[0]) > len(pd)-1 || int(pd[0]) > fabric.MaxAcceptData {
		return nil, fmt.Errorf("verbs: accept data: malformed frame (%d bytes)", len(pd))
	}
	return pd[1 : 1+int(pd[0])], nil
}

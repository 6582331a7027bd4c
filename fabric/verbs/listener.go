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
	"log"
	"net"
	"net/url"
	"strconv"
	"sync"
	"unsafe"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/internal/readypool"
)

const backlog = 128

// listener owns a listening rdma_cm id. Its goroutine turns each connect
// request into a setup with its own event channel (rdma_migrate_id), PD,
// CQ and QP, queued for Accept.
type listener struct {
	opts   fabric.Options
	ev     *evChan
	id     *C.struct_rdma_cm_id
	addr   string
	q      chan *setup
	closed chan struct{}
	loopWG sync.WaitGroup
	once   sync.Once
	hub    *bellHub // nil without Options.Doorbells
	// ready: resources prepared for readyCtx, the device the listener is
	// bound to (ready.go); nil without Options.Ready or such a device.
	ready    *readypool.Pool[*prepared]
	readyCtx *C.struct_ibv_context
}

func (provider) Listen(u *url.URL, o fabric.Options) (fabric.Listener, error) {
	t, err := parseURL(u, o)
	if err != nil {
		return nil, err
	}
	if t.src != "" {
		return nil, fmt.Errorf("verbs: src= is for dialers; listen on the address itself")
	}
	var hub *bellHub
	if o.Doorbells > 0 {
		if hub, err = newBellHub(o.Doorbells); err != nil {
			return nil, err
		}
	}
	ev, err := newEvChan()
	if err != nil {
		hub.releaseIfAny()
		return nil, err
	}
	var id *C.struct_rdma_cm_id
	if rc, err := C.rdma_create_id(ev.ch, &id, nil, C.RDMA_PS_TCP); rc != 0 {
		ev.stop()
		ev.destroy()
		hub.releaseIfAny()
		return nil, fmt.Errorf("verbs: rdma_create_id: %w", err)
	}
	chost := C.CString(t.host)
	rc := C.jk_bind_listen(id, chost, C.int(t.port), backlog)
	C.free(unsafe.Pointer(chost))
	if rc == 0 && t.dev != "" {
		if err := checkDev(id, t.dev); err != nil {
			C.rdma_destroy_id(id)
			ev.stop()
			ev.destroy()
			hub.releaseIfAny()
			return nil, err
		}
	}
	if rc != 0 {
		C.rdma_destroy_id(id)
		ev.stop()
		ev.destroy()
		hub.releaseIfAny()
		return nil, errnoErr("listen on "+u.Host, rc)
	}
	au := url.URL{Scheme: u.Scheme, Host: net.JoinHostPort(t.host, strconv.Itoa(int(C.jk_src_port(id)))), RawQuery: u.RawQuery}
	l := &listener{opts: o, ev: ev, id: id, addr: au.String(), q: make(chan *setup, backlog), closed: make(chan struct{}), hub: hub}
	if o.Ready > 0 && id.verbs != nil { // bound to an address: its device is known
		l.ready, l.readyCtx = newReadyPool(id.verbs, o.Ready, o.QueueDepth, hub), id.verbs
	}
	l.loopWG.Add(1)
	go l.loop()
	if hub != nil {
		return bellListener{l}, nil
	}
	return l, nil
}

func (l *listener) loop() {
	defer l.loopWG.Done()
	for {
		ev, err := l.ev.next()
		if err != nil {
			return
		}
		if ev.typ != C.RDMA_CM_EVENT_CONNECT_REQUEST {
			continue
		}
		trace(stepRequestIn)
		s, err := l.newSetup(ev)
		if err != nil {
			log.Printf("verbs: rejecting a connection on %s: %v", l.addr, err)
			continue
		}
		select {
		case l.q <- s:
		default:
			log.Printf("verbs: rejecting a connection on %s: accept queue full", l.addr)
			s.Close()
		}
	}
}

// newSetup gives a connect request's id its own event channel and verbs
// resources. On error the request is rejected and its id destroyed.
func (l *listener) newSetup(ev event) (*setup, error) {
	reject := func(err error) (*setup, error) {
		C.rdma_reject(ev.id, nil, 0)
		C.rdma_destroy_id(ev.id)
		return nil, err
	}
	data, err := decodeDialData(ev.data, ev.flow)
	if err != nil {
		return reject(err)
	}
	var pr *prepared
	if ev.id.verbs == l.readyCtx { // else made here, for the request's device
		pr, _ = l.ready.Take()
	}
	var ch *evChan
	if pr != nil {
		ch = pr.ev
	} else if ch, err = newEvChan(); err != nil {
		return reject(err)
	}
	if rc, err := C.rdma_migrate_id(ev.id, ch.ch); rc != 0 {
		if pr != nil {
			pr.free()
		} else {
			ch.stop()
			ch.destroy()
		}
		return reject(fmt.Errorf("verbs: rdma_migrate_id: %w", err))
	}
	c := newConn(ch, ev.id, l.opts, false)
	c.peerData = data
	if pr != nil {
		c.adopt(pr) // with its reference to the hub
	} else if l.hub != nil {
		l.hub.acquire() // released by c.Close
		c.hub = l.hub
	}
	ini, resp, err := rdAtom(ev.id.verbs)
	if err != nil {
		c.Close()
		return nil, err
	}
	// The request's values are already from our side's point of view.
	c.initDepth = uint8(min(int(ev.initDepth), int(ini)))
	c.respRes = uint8(min(int(ev.respRes), int(resp)))
	if err := c.initVerbs(); err != nil {
		c.Close() // rejects
		return nil, err
	}
	trace(stepAcceptorVerbs)
	return &setup{c: c}, nil
}

func (l *listener) Accept(ctx context.Context) (fabric.Setup, error) {
	select {
	case s := <-l.q:
		return s, nil
	case <-l.closed:
		return nil, fabric.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *listener) Addr() string { return l.addr }

func (l *listener) Close() error {
	l.once.Do(func() {
		close(l.closed)
		l.ev.stop()
		l.loopWG.Wait()
		for {
			select {
			case s := <-l.q:
				s.Close()
				continue
			default:
			}
			break
		}
		l.ready.Close()
		C.rdma_destroy_id(l.id)
		l.ev.destroy()
		l.hub.releaseIfAny() // accepted connections keep the bells alive
	})
	return nil
}

// ReadyStats implements fabric.ReadyCounter: the resources prepared
// before anyone dials (ready.go).
func (l *listener) ReadyStats() fabric.ReadyStats { return l.ready.Stats() }

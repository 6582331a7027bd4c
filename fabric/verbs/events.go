//go:build rdma

package verbs

/*
#cgo LDFLAGS: -lrdmacm -libverbs
#include <errno.h>
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// event is a copied rdma_cm event (already acknowledged in C).
type event struct {
	typ       C.int
	status    int
	id        *C.struct_rdma_cm_id
	initDepth uint8 // from the passive side's point of view on CONNECT_REQUEST
	respRes   uint8
	flow      bool
	data      []byte
}

func (e event) String() string { return eventName(e.typ) }

func eventName(t C.int) string {
	return C.GoString(C.rdma_event_str(uint32(t)))
}

// evChan is an rdma_cm event channel read through the Go netpoller: its
// fd is non-blocking and a dup of it is wrapped in an os.File, so a reader
// waits in epoll, not in a C call, and closing the file wakes it.
type evChan struct {
	ch  *C.struct_rdma_event_channel
	f   *os.File
	rc  syscall.RawConn
	buf *C.jk_event
}

func newEvChan() (*evChan, error) {
	ch, err := C.rdma_create_event_channel()
	if ch == nil {
		return nil, fmt.Errorf("verbs: rdma_create_event_channel: %w (is rdma_ucm loaded?)", err)
	}
	fd := int(ch.fd)
	if err := syscall.SetNonblock(fd, true); err != nil {
		C.rdma_destroy_event_channel(ch)
		return nil, fmt.Errorf("verbs: event channel: %w", err)
	}
	dup, err := syscall.Dup(fd)
	if err != nil {
		C.rdma_destroy_event_channel(ch)
		return nil, fmt.Errorf("verbs: event channel: %w", err)
	}
	f := os.NewFile(uintptr(dup), "rdma_cm")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		C.rdma_destroy_event_channel(ch)
		return nil, fmt.Errorf("verbs: event channel: %w", err)
	}
	buf := (*C.jk_event)(C.calloc(1, C.sizeof_jk_event))
	return &evChan{ch: ch, f: f, rc: rc, buf: buf}, nil
}

// next waits for the next event. It fails once stop was called.
func (e *evChan) next() (event, error) {
	var rv C.int
	err := e.rc.Read(func(uintptr) bool {
		rv = C.jk_get_event(e.ch, e.buf)
		return rv != -C.EAGAIN
	})
	if err != nil {
		return event{}, err
	}
	if rv < 0 {
		return event{}, fmt.Errorf("verbs: rdma_get_cm_event: %w", syscall.Errno(-rv))
	}
	b := e.buf
	ev := event{
		typ:       b._type,
		status:    int(b.status),
		id:        b.id,
		initDepth: uint8(b.initiator_depth),
		respRes:   uint8(b.responder_resources),
		flow:      b.flow_control != 0,
	}
	if b.pdlen > 0 {
		ev.data = C.GoBytes(unsafe.Pointer(&b.pd[0]), C.int(b.pdlen))
	}
	return ev, nil
}

// stop makes next fail (now, or at once if it is waiting).
func (e *evChan) stop() { e.f.Close() }

// destroy frees the channel; its ids must be destroyed and next must have
// returned for the last time.
func (e *evChan) destroy() {
	C.rdma_destroy_event_channel(e.ch)
	C.free(unsafe.Pointer(e.buf))
}

func errnoErr(what string, rc C.int) error {
	return fmt.Errorf("verbs: %s: %w", what, syscall.Errno(rc))
}

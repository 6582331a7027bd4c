package fabricbench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/jakiro-kv/jakiro/fabric"
)

// The echo target is the raw-fabric floor under a request/response round
// trip through the target's CPU: the initiator WRITEs a 32 B request into
// a slot of the target's region, one target goroutine per connection
// polls the slots and copies each request into the matching response
// slot, and the initiator READs it back. It is RFP with nothing of RFP: no
// store, no checksums, no protocol.
//
// A slot's first 4 bytes are its sequence number (little-endian, from 1):
// the target answers a request slot whose number is the one it expects
// next there, and the response carries the same number. A request also
// ends with its number (PutEchoSeq), and the target answers only once
// both ends carry it: a WRITE may land in pieces (package fabric's
// ordering contract; on shm a 32 B memmove is two 16 B stores), and a
// target that saw the first piece would echo the rest of the last
// request. The response needs no second number: the target writes it
// after the rest, and a READ copies from the front (shm: a memmove whose
// loads x86 keeps in order), so one that finds it finds the rest.
const (
	EchoSlots    = 8                            // request slots, and as many response slots
	EchoReq      = 32                           // request bytes, sequence number included
	EchoResp     = 40                           // response bytes, sequence number included
	EchoSlotSize = 128                          // bytes between slots
	EchoRegion   = 2 * EchoSlots * EchoSlotSize // the region granted: requests, then responses
	EchoRespOff  = EchoSlots * EchoSlotSize     // offset of response slot 0
	echoSetup    = 30 * time.Second             // bound on a dialer's handshake
	echoNoAnswer = 10 * time.Second             // bound on one RoundTrip
	echoSeqBytes = 4                            // the sequence number's size
)

// ServeEcho accepts connections on ln until it is closed, granting each
// an EchoRegion whose Desc is the accept private data and echoing its
// requests on a goroutine of its own, which spins while the connection
// lasts (as a busy-polling partition does). It returns nil once ln is
// closed.
func ServeEcho(ln fabric.Listener) error {
	for {
		s, err := ln.Accept(context.Background())
		if errors.Is(err, fabric.ErrClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		go echoAccept(s)
	}
}

func echoAccept(s fabric.Setup) {
	r, err := s.Alloc(EchoRegion)
	if err != nil {
		s.Close()
		return
	}
	var d [fabric.DescSize]byte
	r.Desc().Put(d[:])
	ctx, cancel := context.WithTimeout(context.Background(), echoSetup)
	c, err := s.Establish(ctx, d[:])
	cancel()
	if err != nil {
		s.Close()
		return
	}
	echoServe(c, r.Bytes())
	c.Close()
}

// word is the sequence number at the start of slot b, read and written
// atomically: the peer's WRITEs land in this memory concurrently.
func word(b []byte) *uint32 { return (*uint32)(unsafe.Pointer(&b[0])) }

// echoServe answers c's requests in mem until c ends.
func echoServe(c fabric.Conn, mem []byte) {
	var next [EchoSlots]uint32
	for i := range next {
		next[i] = 1
	}
	for {
		select {
		case <-c.Done():
			return
		default:
		}
		for s := 0; s < EchoSlots; s++ {
			req := mem[s*EchoSlotSize:]
			if atomic.LoadUint32(word(req)) != next[s] || !landed(req, next[s]) {
				continue
			}
			resp := mem[EchoRespOff+s*EchoSlotSize:]
			copy(resp[echoSeqBytes:EchoResp], req[echoSeqBytes:EchoReq])
			atomic.StoreUint32(word(resp), next[s])
			next[s]++
		}
	}
}

// landed waits a little for the end of a request whose start has landed:
// its last piece is on its way (or it is not coming, and the slot is
// looked at again in the next pass).
func landed(req []byte, seq uint32) bool {
	tail := word(req[EchoReq-echoSeqBytes:])
	for range landWait {
		if atomic.LoadUint32(tail) == seq {
			return true
		}
	}
	return false
}

// landWait bounds landed's look, in loads.
const landWait = 64

// Echo is an initiator of the echo target: a connection, its local region
// (laid out as the target's) and the target's Desc.
type Echo struct {
	Conn   fabric.Conn
	Local  *fabric.Region
	Remote fabric.Desc
	seq    uint32
	ops    []fabric.Op
	cs     [4]fabric.Completion
}

// DialEcho connects to an echo target at addr.
func DialEcho(ctx context.Context, addr string) (*Echo, error) {
	s, err := fabric.Dial(ctx, addr, fabric.Options{})
	if err != nil {
		return nil, err
	}
	c, err := s.Establish(ctx, nil)
	if err != nil {
		s.Close()
		return nil, err
	}
	remote, err := fabric.ParseDesc(c.PeerData())
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("fabricbench: echo target's accept data: %w", err)
	}
	if remote.Len < EchoRegion {
		c.Close()
		return nil, fmt.Errorf("fabricbench: echo target granted %d bytes, want %d", remote.Len, EchoRegion)
	}
	local, err := c.Alloc(EchoRegion)
	if err != nil {
		c.Close()
		return nil, err
	}
	return &Echo{Conn: c, Local: local, Remote: remote, ops: make([]fabric.Op, 0, 2)}, nil
}

// RoundTrip sends one request through slot 0 and READs its response
// again at once until the target has answered it: one request at a time,
// the floor under a one-at-a-time GET on this fabric. It allocates
// nothing; it fails on a connection error or after 10 s without an answer.
func (e *Echo) RoundTrip() error {
	e.seq++
	mem := e.Local.Bytes()
	PutEchoSeq(mem, e.seq)
	e.ops = append(e.ops[:0],
		fabric.Op{Kind: fabric.OpWrite, ID: 0, Local: e.Local, Len: EchoReq, Remote: e.Remote},
		e.fetch())
	var deadline time.Time
	for i := 0; ; i++ {
		if len(e.ops) > 0 {
			if err := e.Conn.Post(e.ops); err != nil {
				return err
			}
			e.ops = e.ops[:0]
		}
		n, err := e.Conn.Poll(e.cs[:])
		if err != nil {
			return err
		}
		for _, c := range e.cs[:n] {
			if c.Err != nil {
				return c.Err
			}
			if c.ID != 1 {
				continue // the request WRITE
			}
			if binary.LittleEndian.Uint32(mem[EchoRespOff:]) == e.seq {
				return nil
			}
			e.ops = append(e.ops, e.fetch()) // not echoed yet: READ again
		}
		// The clock only now and then: a round trip is well under a µs.
		if i&4095 == 4095 {
			if deadline.IsZero() {
				deadline = time.Now().Add(echoNoAnswer)
			} else if time.Now().After(deadline) {
				return fmt.Errorf("fabricbench: no echo of request %d in %v", e.seq, echoNoAnswer)
			}
		}
	}
}

// PutEchoSeq numbers the request in req (a request slot, EchoReq bytes):
// seq at both ends, the payload between them.
func PutEchoSeq(req []byte, seq uint32) {
	binary.LittleEndian.PutUint32(req, seq)
	binary.LittleEndian.PutUint32(req[EchoReq-echoSeqBytes:], seq)
}

func (e *Echo) fetch() fabric.Op {
	return fabric.Op{Kind: fabric.OpRead, ID: 1, Local: e.Local, LocalOff: EchoRespOff, Len: EchoResp,
		Remote: e.Remote, RemoteOff: EchoRespOff}
}

// Close ends the connection; the target's goroutine for it stops.
func (e *Echo) Close() error { return e.Conn.Close() }

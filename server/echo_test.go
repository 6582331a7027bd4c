package server_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os/signal"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/jakiro-kv/jakiro/fabric"
)

// The echo target is the raw-fabric baseline for a request/response round
// trip through the target's CPU: a client WRITEs a 32 B request into a
// slot, one target goroutine polls the slots and copies each request into
// the matching response slot, the client READs it back. It is RFP with
// nothing of RFP: no store, no checksums, no protocol.

const (
	echoSlots    = 8
	echoReq      = 32
	echoResp     = 40
	echoSlotSize = 128
)

func echoChild(listen string) int {
	ln, err := fabric.Listen(listen, fabric.Options{})
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); ln.Close() }()
	fmt.Println("READY", ln.Addr())
	for {
		s, err := ln.Accept(context.Background())
		if err != nil {
			return 0
		}
		r, err := s.Alloc(2 * echoSlots * echoSlotSize)
		if err != nil {
			s.Close()
			continue
		}
		var d [fabric.DescSize]byte
		r.Desc().Put(d[:])
		c, err := s.Establish(context.Background(), d[:])
		if err != nil {
			continue
		}
		go echoServe(c, r.Bytes())
	}
}

func word(b []byte) *uint32 { return (*uint32)(unsafe.Pointer(&b[0])) }

func echoServe(c fabric.Conn, mem []byte) {
	var next [echoSlots]uint32
	for i := range next {
		next[i] = 1
	}
	for {
		select {
		case <-c.Done():
			return
		default:
		}
		for s := 0; s < echoSlots; s++ {
			req := mem[s*echoSlotSize:]
			if atomic.LoadUint32(word(req)) != next[s] {
				continue
			}
			resp := mem[(echoSlots+s)*echoSlotSize:]
			copy(resp[4:echoResp], req[4:echoReq])
			atomic.StoreUint32(word(resp), next[s])
			next[s]++
		}
	}
}

// benchEcho measures request/response round trips per second (millions)
// through the echo target, window benchWindow, streaming.
func benchEcho(b *testing.B, fab string) float64 {
	srv := startServer(b, e2eListenTB(b, fab), "JAKIRO_E2E_ROLE_OVERRIDE=echo")
	conn, remote, local := dialTarget(b, srv.Addr)
	defer conn.Close()
	mem := local.Bytes()
	var seq [echoSlots]uint32
	ops := make([]fabric.Op, 0, 2*echoSlots)
	send := func(s int) {
		seq[s]++
		off := s * echoSlotSize
		binary.LittleEndian.PutUint32(mem[off:], seq[s])
		ops = append(ops, fabric.Op{Kind: fabric.OpWrite, ID: uint64(s), Local: local, LocalOff: off, Len: echoReq, Remote: remote, RemoteOff: uint64(off)})
	}
	fetch := func(s int) {
		off := (echoSlots + s) * echoSlotSize
		ops = append(ops, fabric.Op{Kind: fabric.OpRead, ID: uint64(echoSlots + s), Local: local, LocalOff: off, Len: echoResp, Remote: remote, RemoteOff: uint64(off)})
	}
	b.ResetTimer()
	start := time.Now()
	posted, done := 0, 0
	for s := 0; s < echoSlots && posted < b.N; s++ {
		send(s)
		fetch(s)
		posted++
	}
	pump(b, conn, &ops, func(c fabric.Completion) {
		if c.ID < echoSlots {
			return // the request WRITE
		}
		s := int(c.ID) - echoSlots
		if binary.LittleEndian.Uint32(mem[(echoSlots+s)*echoSlotSize:]) != seq[s] {
			fetch(s) // not echoed yet: READ again
			return
		}
		done++
		if posted < b.N {
			send(s)
			fetch(s)
			posted++
		}
	}, func() bool { return done >= b.N })
	rate := float64(b.N) / time.Since(start).Seconds() / 1e6
	b.ReportMetric(rate, "Mrt/s")
	return rate
}

// BenchmarkEchoLatency: one request at a time through the echo target,
// its answer READ again at once until it is there: the floor under
// BenchmarkLatency's rfp p50 on this fabric and machine (two cores'
// cache lines crossing twice, nothing of Jakiro).
func BenchmarkEchoLatency(b *testing.B) {
	for _, fab := range e2eFabrics() {
		b.Run(fab, func(b *testing.B) {
			srv := startServer(b, e2eListenTB(b, fab), "JAKIRO_E2E_ROLE_OVERRIDE=echo")
			conn, remote, local := dialTarget(b, srv.Addr)
			defer conn.Close()
			mem := local.Bytes()
			const respOff = echoSlots * echoSlotSize
			h := hdrhistogram.New(1, int64(time.Second/time.Nanosecond), 3)
			ops := make([]fabric.Op, 0, 2)
			fetch := func() {
				ops = append(ops, fabric.Op{Kind: fabric.OpRead, ID: 1, Local: local, LocalOff: respOff, Len: echoResp, Remote: remote, RemoteOff: respOff})
			}
			b.ResetTimer()
			for seq := uint32(1); seq <= uint32(b.N); seq++ {
				t0 := time.Now()
				binary.LittleEndian.PutUint32(mem, seq)
				ops = append(ops, fabric.Op{Kind: fabric.OpWrite, Local: local, Len: echoReq, Remote: remote})
				fetch()
				got := false
				pump(b, conn, &ops, func(c fabric.Completion) {
					if c.ID == 1 {
						if got = binary.LittleEndian.Uint32(mem[respOff:]) == seq; !got {
							fetch()
						}
					}
				}, func() bool { return got })
				h.RecordValue(int64(time.Since(t0)))
			}
			b.ReportMetric(float64(h.ValueAtQuantile(50))/1e3, "p50-µs")
			b.ReportMetric(float64(h.ValueAtQuantile(99))/1e3, "p99-µs")
		})
	}
}

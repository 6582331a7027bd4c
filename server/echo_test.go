package server_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/fabricbench"
)

// The echo target (fabricbench.ServeEcho) is the raw-fabric baseline for a
// request/response round trip through the target's CPU: a client WRITEs a
// 32 B request into a slot, one target goroutine polls the slots and copies
// each request into the matching response slot, the client READs it back.
// It is RFP with nothing of RFP: no store, no checksums, no protocol.
// `jakiro-bench onebyone` measures the same target beside the server.

// echoChild serves the echo target on listen as a servertest child: READY
// once it listens, until SIGTERM.
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
	if err := fabricbench.ServeEcho(ln); err != nil {
		fmt.Println("echo target:", err)
		return 1
	}
	return 0
}

// benchEcho measures request/response round trips per second (millions)
// through the echo target, window benchWindow, streaming.
func benchEcho(b *testing.B, fab string) float64 {
	const slots, slotSize, respOff = fabricbench.EchoSlots, fabricbench.EchoSlotSize, fabricbench.EchoRespOff
	srv := startServer(b, e2eListenTB(b, fab), "JAKIRO_E2E_ROLE_OVERRIDE=echo")
	conn, remote, local := dialTarget(b, srv.Addr)
	defer conn.Close()
	mem := local.Bytes()
	var seq [slots]uint32
	ops := make([]fabric.Op, 0, 2*slots)
	send := func(s int) {
		seq[s]++
		off := s * slotSize
		fabricbench.PutEchoSeq(mem[off:], seq[s])
		ops = append(ops, fabric.Op{Kind: fabric.OpWrite, ID: uint64(s), Local: local, LocalOff: off, Len: fabricbench.EchoReq, Remote: remote, RemoteOff: uint64(off)})
	}
	fetch := func(s int) {
		off := respOff + s*slotSize
		ops = append(ops, fabric.Op{Kind: fabric.OpRead, ID: uint64(slots + s), Local: local, LocalOff: off, Len: fabricbench.EchoResp, Remote: remote, RemoteOff: uint64(off)})
	}
	b.ResetTimer()
	start := time.Now()
	posted, done := 0, 0
	for s := 0; s < slots && posted < b.N; s++ {
		send(s)
		fetch(s)
		posted++
	}
	pump(b, conn, &ops, func(c fabric.Completion) {
		if c.ID < slots {
			return // the request WRITE
		}
		s := int(c.ID) - slots
		if binary.LittleEndian.Uint32(mem[respOff+s*slotSize:]) != seq[s] {
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
// its answer READ again at once until it is there
// (fabricbench.Echo.RoundTrip): the floor under BenchmarkLatency's rfp p50
// on this fabric and machine (two cores' cache lines crossing twice,
// nothing of Jakiro).
func BenchmarkEchoLatency(b *testing.B) {
	for _, fab := range e2eFabrics() {
		b.Run(fab, func(b *testing.B) {
			srv := startServer(b, e2eListenTB(b, fab), "JAKIRO_E2E_ROLE_OVERRIDE=echo")
			e, err := fabricbench.DialEcho(context.Background(), srv.Addr)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			h := hdrhistogram.New(1, int64(time.Second/time.Nanosecond), 3)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if err := e.RoundTrip(); err != nil {
					b.Fatal(err)
				}
				h.RecordValue(int64(time.Since(t0)))
			}
			b.ReportMetric(float64(h.ValueAtQuantile(50))/1e3, "p50-µs")
			b.ReportMetric(float64(h.ValueAtQuantile(99))/1e3, "p99-µs")
		})
	}
}

package rfp

import (
	"fmt"
	"testing"

	"github.com/jakiro-kv/jakiro/fabric"
)

// landConn is a server connection whose reply WRITEs land in the client's
// region at once, allocating nothing: BenchmarkRoundTripCPU's.
type landConn struct {
	replyConn
	local []byte
}

func (c *landConn) Post(ops []fabric.Op) error {
	for _, op := range ops {
		copy(c.local[op.RemoteOff:], op.Local.Bytes()[op.LocalOff:op.LocalOff+op.Len])
	}
	c.comps += len(ops)
	return nil
}

// BenchmarkRoundTripCPU is the protocol's own CPU per GET of a 32 B value
// (16 B key), both ends in one goroutine and the fabric a copy: the
// client engine's Submit, posts, completions and result, the session's
// poll, response and reply flush. No clock reads, no other core, no
// store, no scheduler: what the end-to-end benchmarks (BenchmarkLatency,
// BenchmarkGet in package server) cannot tell apart from the caches
// that cross cores. window: GETs in flight per round (one partition);
// rfp fetches (as on shm, the READ found ready), reply has the server
// WRITE the answer. On the 2-vCPU VM: 500-620 ns at window 1, about half
// of a GET one at a time end to end, with runs ±10% apart (benchstat
// with -count 10).
func BenchmarkRoundTripCPU(b *testing.B) {
	for _, m := range []Mode{ModeRFP, ModeReply} {
		for _, window := range []int{1, 8} {
			b.Run(fmt.Sprintf("%v/window%d", m, window), func(b *testing.B) {
				roundTrips(b, m, window)
			})
		}
	}
}

func roundTrips(b *testing.B, m Mode, window int) {
	l, err := NewLayout(1, 8, 4096, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	mem := make([]byte, l.Size())
	local := fabric.NewRegion(mem, fabric.Desc{Len: uint64(len(mem)), Key: 1}, 0, nil)
	w := Welcome{Layout: l, Grant: fabric.Desc{Len: uint64(l.Size()), Key: testGrantKey}, ClientID: 1}
	e, err := NewEngine(local, w, EngineConfig{Mode: m, FetchDelayNS: -1, CopyReads: true, Window: window})
	if err != nil {
		b.Fatal(err)
	}
	grant := make([]byte, l.Size())
	PutControl(grant, fabric.Desc{Len: uint64(len(mem)), Key: 1})
	conn := &landConn{replyConn: replyConn{done: make(chan struct{})}, local: mem}
	region := fabric.NewRegion(grant, fabric.Desc{Len: uint64(len(grant)), Key: testGrantKey}, 0, nil)
	s := newSession(1, conn, region, l, DefaultReplyTimeout, newLongBudget(DefaultLongBudget), nil)
	key, val := []byte("key-000000000001"), make([]byte, 32)
	batch := make([]Request, window)
	var now int64
	// post moves the bytes of what the engine has to post, as a fabric
	// would, and completes it.
	post := func() {
		ops := e.Pending()
		for i := range ops {
			op := &ops[i]
			lo, ro := op.LocalOff, int(op.RemoteOff)
			if op.Kind == fabric.OpWrite {
				copy(grant[ro:ro+op.Len], mem[lo:lo+op.Len])
			} else {
				copy(mem[lo:lo+op.Len], grant[ro:ro+op.Len])
			}
		}
		e.Posted()
		e.Rang()
		for i := range ops {
			if err := e.Complete(now, fabric.Completion{ID: ops[i].ID, Kind: ops[i].Kind}); err != nil {
				b.Fatal(err)
			}
		}
	}
	done := 0
	for b.Loop() {
		if done == 0 {
			for range window {
				if _, err := e.Submit(now, 0, OpGet, key, nil, 0); err != nil {
					b.Fatal(err)
				}
			}
			done = window
			post() // the requests land
			n := s.PollBatch(0, now, batch)
			for i := range batch[:n] {
				if err := s.Respond(0, &batch[i], StatusOK, val); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := s.FlushReplies(0); err != nil {
				b.Fatal(err)
			}
			// rfp: the fetch, found ready; reply: the answers taken.
			e.Tick(now)
			post()
			if got := len(e.Results()); got != window {
				b.Fatalf("%d results, want %d (counters %+v)", got, window, e.Counters())
			}
			e.Consumed()
			now += 1000
		}
		done--
	}
	c := e.Counters()
	if c.Ops > 0 {
		b.ReportMetric(c.FabricOpsPerOp(), "fabricops/op")
	}
}

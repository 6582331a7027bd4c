package rfp

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/jakiro-kv/jakiro/fabric"
)

// Tests of what rings of variable-length records add: coalesced WRITEs
// and READs, wrap-around, long values in parts and pieces.

// Eight requests submitted to one partition before one Pending go out in
// one WRITE; once the server answered them all, one READ brings all eight
// results.
func TestEngineCoalescesWritesAndReads(t *testing.T) {
	h := newHarness(t, 2, 8, 1024, adaptive(ModeRFP))
	const p = 1
	round := func(op Op, want func(i int) []byte) {
		t.Helper()
		before := h.e.Counters()
		slots := make([]int, 8)
		for i := range slots {
			key := []byte(fmt.Sprintf("key-%d", i))
			var val []byte
			if op == OpPut {
				val = want(i)
			}
			slots[i] = h.submit(p, op, key, val)
		}
		if h.e.Free(p) {
			t.Fatal("partition free with 8 requests in a window of 8")
		}
		ops := h.e.Pending()
		if len(ops) != 1 || ops[0].Kind != fabric.OpWrite || ops[0].LocalOff != int(ops[0].RemoteOff) {
			t.Fatalf("pending %+v: want one WRITE of the 8 records", ops)
		}
		h.post()
		h.apply(0)
		h.srv.serve()
		if h.srv.served != 8*(1+int(before.Ops)/8) {
			t.Fatalf("server answered %d requests", h.srv.served)
		}
		h.complete()
		if len(h.order) != int(before.Ops) {
			t.Fatal("results before any READ")
		}
		h.now = h.e.Next()
		h.e.Tick(h.now)
		h.post()
		if len(h.inflight) != 1 || h.inflight[0].Kind != fabric.OpRead {
			t.Fatalf("in flight %+v: want one READ", h.inflight)
		}
		h.complete()
		for i, s := range slots {
			r, ok := h.results[s]
			if !ok {
				t.Fatalf("request %d: no result after the READ", i)
			}
			if r.st != StatusOK || op == OpGet && !bytes.Equal(r.val, want(i)) {
				t.Fatalf("request %d: %v %q, want %q", i, r.st, r.val, want(i))
			}
		}
		if d := h.e.Counters().Sub(before); d.Ops != 8 || d.Writes != 1 || d.Reads != 1 || d.NotReady != 0 || d.ExtraReads != 0 {
			t.Fatalf("counters %+v: want 8 ops in 1 WRITE and 1 READ", d)
		}
	}
	val := func(i int) []byte { return bytes.Repeat([]byte{'a' + byte(i)}, 3*i+1) }
	round(OpPut, val)
	round(OpGet, val)
}

// partOf is the partition an op of layout l touches.
func partOf(l Layout, op fabric.Op) int {
	return (op.LocalOff - ControlSize) / (l.ReqRing + l.RespRing)
}

// mixedRounds runs rounds of mixed requests of every size up to
// maxValue on every partition, many in flight, checking every result
// against a model of the store, and every post: at most two WRITEs and
// two READs per partition (two only at a ring's end).
func mixedRounds(t *testing.T, h *harness, rounds, maxValue int, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	model := map[string][]byte{}
	type want struct {
		st  Status
		val []byte
	}
	expect := map[int]want{}
	sizes := []int{0, 1, 7, 8, 31, 100, 500, h.l.CallBudget() - 8, h.l.CallBudget(), h.l.CallBudget() + 1, maxValue}
	for round := 0; round < rounds; round++ {
		for p := 0; p < h.l.Partitions; p++ {
			for n := rng.IntN(h.l.Slots) + 1; n > 0 && h.e.Free(p); n-- {
				key := fmt.Sprintf("p%d-k%d", p, rng.IntN(6))
				var op Op
				var val []byte
				w := want{st: StatusOK}
				switch rng.IntN(5) {
				case 0, 1:
					op = OpPut
					size := sizes[rng.IntN(len(sizes))]
					if rng.IntN(2) == 0 {
						size = rng.IntN(maxValue + 1)
					}
					val = make([]byte, size)
					for i := range val {
						val[i] = byte(rng.Uint32())
					}
					model[key] = val
				case 2:
					op = OpDelete
					if _, ok := model[key]; !ok {
						w.st = StatusNotFound
					}
					delete(model, key)
				default:
					op = OpGet
					v, ok := model[key]
					if !ok {
						w.st = StatusNotFound
					}
					w.val = v
				}
				expect[h.submit(p, op, []byte(key), val)] = w
			}
		}
		h.runUntil(func() bool { return h.e.Active() == 0 }, 100, h.now+int64(1e9))
		for slot, w := range expect {
			r, ok := h.results[slot]
			if !ok {
				t.Fatalf("round %d: no result for slot %d", round, slot)
			}
			if r.st != w.st || !bytes.Equal(r.val, w.val) {
				t.Fatalf("round %d slot %d: %v %d B, want %v %d B", round, slot, r.st, len(r.val), w.st, len(w.val))
			}
		}
		clear(expect)
		clear(h.results)
	}
	for _, ops := range h.posts {
		var writes, reads [MaxPartitions]int
		for _, op := range ops {
			p := partOf(h.l, op)
			if op.Kind == fabric.OpWrite {
				writes[p]++
			} else {
				reads[p]++
			}
		}
		for p := 0; p < h.l.Partitions; p++ {
			if writes[p] > 2 || reads[p] > 2 {
				t.Fatalf("a post of %d WRITEs and %d READs to partition %d: %+v", writes[p], reads[p], p, ops)
			}
		}
	}
	if h.e.Active() != 0 || h.e.Err() != nil {
		t.Fatalf("%d active, err %v", h.e.Active(), h.e.Err())
	}
}

// Many rounds of mixed sizes: both rings of every partition wrap many
// times (records go to the ring's start after wrap markers, WRITEs and
// READs split at the ring's end), and every value comes back whole.
func TestEngineRingsWrap(t *testing.T) {
	// Ring sizes of powers of two (offsets by mask) and not (by division).
	for _, rings := range [][2]int{{MinRing, 2 * MinRing}, {3 * MinRing, 5 * MinRing}} {
		for _, m := range []Mode{ModeRFP, ModeReply, ModeHybrid} {
			reqRing, respRing := rings[0], rings[1]
			t.Run(fmt.Sprintf("%s/%d-%d", m, reqRing, respRing), func(t *testing.T) {
				// Small rings: values over the budget come in pieces, and
				// requests over a quarter of the request ring go in parts.
				h := newHarnessRings(t, 2, 8, 1500, reqRing, respRing, EngineConfig{Mode: m, FetchDelayNS: -1, HybridR: 2})
				mixedRounds(t, h, 300, 1500, uint64(m))
				for p := range h.e.parts {
					ps := &h.e.parts[p]
					if laps := ps.wpos / uint64(h.l.ReqRing); laps < 10 {
						t.Errorf("partition %d: request ring wrapped %d times, want many", p, laps)
					}
					if laps := ps.rpos / uint64(h.l.RespRing); laps < 10 {
						t.Errorf("partition %d: response ring wrapped %d times, want many", p, laps)
					}
				}
				c := h.e.Counters()
				if m == ModeReply && c.Reads != 0 {
					t.Errorf("reply mode: %d READs", c.Reads)
				}
				t.Logf("%+v", c)
			})
		}
	}
	// Small fixed fetches: most responses are short and need a second
	// READ, some of it in a ring's last bytes.
	for _, rfs := range []int{MinRFS, 24, 40, 48, 64} {
		t.Run(fmt.Sprintf("rfs%d", rfs), func(t *testing.T) {
			h := newHarnessRings(t, 2, 8, 1500, 0, MinRing, EngineConfig{Mode: ModeRFP, RFS: rfs, FetchDelayNS: -1})
			mixedRounds(t, h, 300, 1500, uint64(rfs))
		})
	}
	// Default rings, values inline (up to the budget).
	h := newHarness(t, 3, 8, 4000, adaptive(ModeRFP))
	mixedRounds(t, h, 400, h.l.CallBudget(), 9)
	if laps := h.e.parts[0].rpos / uint64(h.l.RespRing); laps < 5 {
		t.Errorf("response ring wrapped %d times, want many", laps)
	}
}

// Long values: a PUT longer than a quarter of the request ring goes in
// parts (up to the server's MaxValue), a GET of a value over the budget
// comes in pieces; two long GETs in flight on one partition each get
// their own value; the same in reply mode.
func TestEngineLongValues(t *testing.T) {
	const maxValue = 300_000
	for _, m := range []Mode{ModeRFP, ModeReply} {
		t.Run(m.String(), func(t *testing.T) {
			h := newHarness(t, 2, 8, maxValue, adaptive(m))
			if h.l.maxReqRecord() >= 40_000 || h.l.CallBudget() >= 40_000 {
				t.Fatalf("layout %+v: values of 40 kB would not be long", h.l)
			}
			vals := map[string][]byte{}
			for i, n := range []int{h.l.maxReqRecord(), 40_000, 123_457, maxValue} {
				v := make([]byte, n)
				for j := range v {
					v[j] = byte(j*7 + i)
				}
				key := fmt.Sprintf("long-%d", i)
				vals[key] = v
				if r := h.do(0, OpPut, []byte(key), v); r.st != StatusOK {
					t.Fatalf("PUT of %d B: %v", n, r.st)
				}
				if !bytes.Equal(h.srv.store[key], v) {
					t.Fatalf("server stored %d B for a PUT of %d B", len(h.srv.store[key]), n)
				}
				if r := h.do(0, OpGet, []byte(key), nil); r.st != StatusOK || !bytes.Equal(r.val, v) {
					t.Fatalf("GET of %d B: %v %d B", n, r.st, len(r.val))
				}
			}
			// Two long GETs and a short one in flight on one partition.
			a := h.submit(0, OpGet, []byte("long-2"), nil)
			b := h.submit(0, OpGet, []byte("long-3"), nil)
			h.do(0, OpPut, []byte("short"), []byte("s"))
			c := h.submit(0, OpGet, []byte("short"), nil)
			ra, rb, rc := h.result(a), h.result(b), h.result(c)
			if !bytes.Equal(ra.val, vals["long-2"]) || !bytes.Equal(rb.val, vals["long-3"]) || string(rc.val) != "s" {
				t.Fatalf("long GETs in flight together: %d B, %d B, %q", len(ra.val), len(rb.val), rc.val)
			}
			if h.e.Active() != 0 || len(h.srv.sess.rings[0].out) != 0 || h.srv.sess.rings[0].in != nil {
				t.Fatalf("left over: %d active, session holds %d long responses", h.e.Active(), len(h.srv.sess.rings[0].out))
			}
			if m == ModeReply && h.e.Counters().Reads != 0 {
				t.Fatalf("reply mode: %d READs", h.e.Counters().Reads)
			}
		})
	}
}

// A value longer than the server's MaxValue (or a key over MaxKeyLen) is
// refused by Submit, and the engine goes on.
func TestEngineRefusesOverMax(t *testing.T) {
	h := newHarness(t, 1, 8, 1000, adaptive(ModeRFP))
	for _, c := range []struct{ key, val int }{{1, 1001}, {1, MaxValueLen + 1}, {MaxKeyLen + 1, 0}} {
		_, err := h.e.Submit(h.now, 0, OpPut, make([]byte, c.key), make([]byte, c.val), 0)
		if err == nil || errors.Is(err, ErrRingFull) {
			t.Fatalf("key %d B value %d B: %v, want refused", c.key, c.val, err)
		}
	}
	if h.e.Active() != 0 || h.e.Err() != nil || len(h.e.Pending()) != 0 {
		t.Fatalf("after refusals: %d active, err %v", h.e.Active(), h.e.Err())
	}
	v := make([]byte, 1000)
	if r := h.do(0, OpPut, []byte("k"), v); r.st != StatusOK {
		t.Fatalf("PUT of MaxValue: %v", r.st)
	}
	if r := h.do(0, OpGet, []byte("k"), nil); r.st != StatusOK || len(r.val) != 1000 {
		t.Fatalf("GET of MaxValue: %v %d B", r.st, len(r.val))
	}
}

// A response longer than the fetch that ends at the ring's end, with the
// fetch (an RFS set below the record's length) stopping within the ring's
// last bytes: the second READ brings the record's rest from there (not
// from the next lap, where a record could not start in so few bytes), and
// the value comes back.
func TestEngineShortRecordAtRingEnd(t *testing.T) {
	const rfs = 48 // a 40-byte value's record holds 52 bytes
	h := newHarnessRings(t, 1, 8, 1000, 0, MinRing, EngineConfig{Mode: ModeRFP, RFS: rfs, FetchDelayNS: -1})
	if RFSFor(40) <= rfs {
		t.Fatalf("RFSFor(40) = %d", RFSFor(40))
	}
	h.do(0, OpPut, []byte("forty"), bytes.Repeat([]byte("40"), 20))
	ring := uint64(h.l.RespRing)
	at := ring - uint64(RFSFor(40)) // where the record ends at the ring's end
	for ps := &h.e.parts[0]; ps.rpos%ring != at; {
		h.do(0, OpPut, []byte("k"), nil) // one line's response
	}
	before := h.e.Counters()
	r := h.do(0, OpGet, []byte("forty"), nil)
	if r.st != StatusOK || !bytes.Equal(r.val, bytes.Repeat([]byte("40"), 20)) {
		t.Fatalf("GET: %v %q", r.st, r.val)
	}
	if d := h.e.Counters().Sub(before); d.Reads != 2 || d.Torn != 0 {
		t.Fatalf("counters %+v: want the fetch and one READ of the last 4 bytes", d)
	}
	if got := h.e.parts[0].rpos % ring; got != 0 {
		t.Fatalf("response ring at %d after the record, want its start", got)
	}
}

// Every value length around one and two request records, with keys of
// several lengths: the value goes in parts where it must (the key counts
// against the join's record), and comes back whole.
func TestEngineLongValueEveryLength(t *testing.T) {
	h := newHarnessRings(t, 1, 8, 1500, MinRing, MinRing, EngineConfig{Mode: ModeRFP, FetchDelayNS: -1})
	maxRec := h.e.maxReqRec
	val := make([]byte, 2*maxRec+16)
	for i := range val {
		val[i] = byte(i * 7)
	}
	for _, klen := range []int{1, 10, 100, MaxKeyLen} {
		key := bytes.Repeat([]byte{'k'}, klen)
		for n := maxRec - klen - 64; n <= min(len(val), h.l.MaxValue); n++ {
			if r := h.do(0, OpPut, key, val[:n]); r.st != StatusOK {
				t.Fatalf("key %d B, value %d B: PUT %v", klen, n, r.st)
			}
			if r := h.do(0, OpGet, key, nil); r.st != StatusOK || !bytes.Equal(r.val, val[:n]) {
				t.Fatalf("key %d B, value %d B: GET %v, %d B", klen, n, r.st, len(r.val))
			}
		}
	}
}

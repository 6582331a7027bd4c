package rfp

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/internal/fuzzseed"
)

// FuzzEngine drives an Engine against a real Session (the harness of
// engine_harness_test.go) through what the input spells: partitions,
// window, ring sizes, the largest value, mode and fetch size (cfg), then
// requests of any key and value length, several in flight per partition,
// some READs landing torn (ops). Every result is checked against a model
// of the store, and every request must finish: a livelock fails the
// harness's bound. It found a fetch that never completed a short record
// ending at a ring's end, and a long value that panicked sendParts.
//
//	go test ./rfp -run '^$' -fuzz '^FuzzEngine$' -fuzztime 60s
func FuzzEngine(f *testing.F) {
	ops := func(specs ...[5]byte) []byte {
		var b []byte
		for _, s := range specs {
			b = append(b, s[:]...)
		}
		return b
	}
	// One partition, window 8, response ring MinRing, max value 1500, rfp,
	// RFS 16: small PUTs and GETs of 40 B values walk the response ring.
	var walk [][5]byte
	for i := range 120 {
		walk = append(walk, [5]byte{0x80 | byte(i%2*2), 1, 40, 0, 0})
	}
	fuzzseed.Add(f, "short-records-around-the-ring", uint32(7<<1|1<<8|1<<12), ops(walk...))
	// RFS 48, window 1: a GET's 56 B response ends at the response ring's
	// end, its fetch 8 bytes short (two PUTs, 121 PUTs' and one 24 B GET
	// response before it: 32+1936+24 = 2048-56).
	end := [][5]byte{{0x80, 0, 8, 0, 0}, {0x80, 1, 40, 0, 0}}
	for range 121 {
		end = append(end, [5]byte{0x80, 2, 0, 0, 0})
	}
	end = append(end, [5]byte{0x82, 0, 0, 0, 0}, [5]byte{0x82, 1, 0, 0, 0})
	fuzzseed.Add(f, "short-record-at-ring-end", uint32(1<<8|4<<12), ops(end...))
	// A value a few bytes under two parts with a 250 B key (the join
	// cannot carry key and rest).
	fuzzseed.Add(f, "long-value-key-250", uint32(7<<1|1<<8), ops([5]byte{0x80, 6 << 3, 0xb5, 0x03, 0}, [5]byte{0x82, 6 << 3, 0, 0, 0}))
	// Every mode, torn READs, two partitions.
	fuzzseed.Add(f, "hybrid-torn", uint32(1|3<<1|2<<4|2<<10|3<<12|5<<16), ops(walk[:40]...))
	fuzzseed.Add(f, "reply-big", uint32(1|7<<1|2<<8|1<<10), ops([5]byte{0, 2, 0x88, 0x13, 0}, [5]byte{0x82, 2, 0, 0, 0}, [5]byte{0x83, 2, 0, 0, 0}))
	f.Fuzz(func(t *testing.T, cfg uint32, ops []byte) {
		partitions := 1 + int(cfg&1)
		slots := 1 + int(cfg>>1&7)
		respRing := MinRing * (1 + int(cfg>>4&3))
		reqRing := MinRing * (1 + int(cfg>>6&3))
		maxValue := []int{300, 1500, 5000}[cfg>>8&3%3]
		mode := []Mode{ModeRFP, ModeReply, ModeHybrid}[cfg>>10&3%3]
		rfs := []int{0, MinRFS, 24, 40, 48, 64, 200, 1000}[cfg>>12&7]
		tearEvery := 0 // every READ whole, or one in 2 to 31 torn
		if v := int(cfg >> 16 & 0xff); v > 0 {
			tearEvery = 2 + v%30
		}
		h := newHarnessRings(t, partitions, slots, maxValue, reqRing, respRing,
			EngineConfig{Mode: mode, RFS: rfs, FetchDelayNS: -1, HybridR: 2})
		reads := 0
		h.tear = func(op fabric.Op) int {
			if reads++; tearEvery > 0 && reads%tearEvery == 0 {
				return op.Len * (reads % 7) / 8 // a READ landing in part; read again
			}
			return op.Len
		}
		keyLens := []int{1, 7, 8, 16, 100, 200, 249, MaxKeyLen}
		model := map[string][]byte{}
		type want struct {
			key string
			st  Status
			val []byte
		}
		expect := map[int]want{}
		settle := func() {
			// 20 ms of the harness's clock: a few round trips each for
			// 16 requests at most; a livelock fails in ~0.2 s.
			h.runUntil(func() bool { return h.e.Active() == 0 }, 100, h.now+int64(20e6))
			for slot, w := range expect {
				r, ok := h.results[slot]
				if !ok {
					t.Fatalf("no result for slot %d (key %d B)", slot, len(w.key))
				}
				if r.st != w.st || !bytes.Equal(r.val, w.val) {
					t.Fatalf("key %d B: %v %d B, want %v %d B", len(w.key), r.st, len(r.val), w.st, len(w.val))
				}
			}
			clear(expect)
			clear(h.results)
		}
		for n := 0; len(ops) >= 5 && n < 300; n++ {
			b := ops[:5]
			ops = ops[5:]
			key := string(bytes.Repeat([]byte{'a' + b[1]&7}, keyLens[b[1]>>3&7]))
			p := int(key[0]) % partitions
			if !h.e.Free(p) {
				settle()
			}
			var op Op
			var val []byte
			w := want{key: key, st: StatusOK}
			switch b[0] & 3 {
			case 0, 1:
				op = OpPut
				val = bytes.Repeat([]byte{b[4] | 1}, int(binary.LittleEndian.Uint16(b[2:]))%(maxValue+1))
				for i := range val {
					val[i] += byte(i)
				}
				model[key] = val
			case 2:
				op = OpGet
				v, ok := model[key]
				if !ok {
					w.st = StatusNotFound
				}
				w.val = v
			default:
				op = OpDelete
				if _, ok := model[key]; !ok {
					w.st = StatusNotFound
				}
				delete(model, key)
			}
			expect[h.submit(p, op, []byte(key), val)] = w
			if b[0]&0x80 != 0 {
				settle()
			}
		}
		settle()
		if h.e.Err() != nil {
			t.Fatal(h.e.Err())
		}
	})
}

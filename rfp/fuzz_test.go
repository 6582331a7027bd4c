package rfp

import (
	"bytes"
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/internal/fuzzseed"
)

// Fuzz targets for every decoder of bytes a peer controls: request slots
// (the server reads what clients WRITE), response slots (the client reads
// what the server left), the handshake's Hello and Welcome, and the
// control block. Each seeds its corpus in testdata/fuzz with the malformed
// inputs known so far; `make fuzz` runs each for $(FUZZTIME).
//
//	go test ./rfp -run '^$' -fuzz '^FuzzRequestSlot$' -fuzztime 30s

// within reports whether sub aliases a part of b (or is empty).
func within(sub, b []byte) bool {
	if len(sub) == 0 {
		return true
	}
	s := uintptr(unsafe.Pointer(unsafe.SliceData(sub)))
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return s >= lo && s+uintptr(cap(sub)) <= lo+uintptr(len(b))
}

// fuzzMaxValue maps a fuzzed number onto a server's possible max values.
func fuzzMaxValue(m uint32) int { return int(m % (MaxValueLen + 1)) }

func FuzzRequestSlot(f *testing.F) {
	good := make([]byte, 512)
	n := PutRequest(good, 7, OpPut, FlagReply, []byte("user:42"), []byte("value"), 60)
	fuzzseed.Add(f, "valid-put", good[:n], uint32(7), uint32(1024))
	fuzzseed.Add(f, "value-over-max", good, uint32(7), uint32(4))
	fuzzseed.Add(f, "checksum-cut-off", good[:n-1], uint32(7), uint32(1024))
	fuzzseed.Add(f, "shorter-than-header", good[:10], uint32(7), uint32(1024))
	fuzzseed.Add(f, "other-seq", good, uint32(8), uint32(1024))
	huge := bytes.Clone(good[:n])
	binary.LittleEndian.PutUint16(huge[6:], 0xffff) // key length over MaxKeyLen
	fuzzseed.Add(f, "key-length-over-max", huge, uint32(7), uint32(1024))
	huge = bytes.Clone(good[:n])
	binary.LittleEndian.PutUint32(huge[8:], 0xffffffff) // value length past everything
	fuzzseed.Add(f, "value-length-past-slot", huge, uint32(7), uint32(MaxValueLen))
	f.Fuzz(func(t *testing.T, slot []byte, seq, maxValue uint32) {
		mv := fuzzMaxValue(maxValue)
		var r Request
		st := ParseRequest(slot, seq, mv, &r)
		if len(slot) >= reqHeader+sumSize && binary.LittleEndian.Uint32(slot) == seq {
			klen, vlen := int(binary.LittleEndian.Uint16(slot[6:])), int(binary.LittleEndian.Uint32(slot[8:]))
			if (klen > MaxKeyLen || vlen > mv || reqHeader+klen+vlen+sumSize > len(slot)) && st != SlotMalformed {
				t.Fatalf("lengths key %d value %d in a %d-byte slot (max value %d): %v, want malformed", klen, vlen, len(slot), mv, st)
			}
		} else if st != SlotEmpty {
			t.Fatalf("no sequence number %d, yet %v", seq, st)
		}
		if st == SlotReady {
			if r.Seq != seq || len(r.Key) > MaxKeyLen || len(r.Value) > mv || !within(r.Key, slot) || !within(r.Value, slot) {
				t.Fatalf("accepted request out of bounds: seq %d key %d B value %d B", r.Seq, len(r.Key), len(r.Value))
			}
			// What decodes encodes back to the same bytes.
			again := make([]byte, RequestLen(r.Key, r.Value))
			m := PutRequest(again, r.Seq, r.Op, r.Flags, r.Key, r.Value, r.TTL)
			if !bytes.Equal(again[:m], slot[:m]) {
				t.Fatalf("re-encoded request differs:\n%x\n%x", again[:m], slot[:m])
			}
		}
		// What encodes decodes: the fuzzed bytes as key and value.
		key := slot[:min(len(slot), MaxKeyLen)]
		val := slot[len(key):]
		val = val[:min(len(val), mv)]
		buf := make([]byte, RequestLen(key, val)+int(maxValue%64))
		PutRequest(buf, seq, Op(maxValue), uint8(maxValue>>8), key, val, maxValue)
		var back Request
		if st := ParseRequest(buf, seq, mv, &back); st != SlotReady ||
			back.Op != Op(maxValue) || back.Flags != uint8(maxValue>>8) || back.TTL != maxValue ||
			!bytes.Equal(back.Key, key) || !bytes.Equal(back.Value, val) {
			t.Fatalf("round trip of key %d B value %d B: %v", len(key), len(val), st)
		}
	})
}

func FuzzResponseSlot(f *testing.F) {
	slot := make([]byte, 256)
	copy(ResponseValue(slot), "hello")
	n := SealResponse(slot, 9, StatusOK, 5)
	fuzzseed.Add(f, "valid", slot[:n], uint32(9), uint32(1000))
	fuzzseed.Add(f, "fetched-too-little", slot[:n-1], uint32(9), uint32(1000))
	fuzzseed.Add(f, "shorter-than-header", slot[:3], uint32(9), uint32(1000))
	fuzzseed.Add(f, "other-seq", slot[:n], uint32(10), uint32(1000))
	fuzzseed.Add(f, "value-over-max", slot[:n], uint32(9), uint32(4))
	big := bytes.Clone(slot[:n])
	binary.LittleEndian.PutUint32(big, respHeaderWord(9, StatusOK, MaxValueLen)) // claims 1 MiB
	fuzzseed.Add(f, "claims-1MiB", big, uint32(9), uint32(1000))
	f.Fuzz(func(t *testing.T, b []byte, seq, maxValue uint32) {
		mv := fuzzMaxValue(maxValue)
		var r Response
		st, need := ParseResponse(b, seq, mv, &r)
		switch st {
		case SlotReady:
			if len(r.Value) > mv || r.Status > 0xf || !within(r.Value, b) {
				t.Fatalf("accepted response out of bounds: %d B (max %d), status %d", len(r.Value), mv, r.Status)
			}
			again := make([]byte, RFSFor(len(r.Value)))
			copy(ResponseValue(again), r.Value)
			m := SealResponse(again, seq, r.Status, len(r.Value))
			if !bytes.Equal(again, b[:m]) {
				t.Fatalf("re-sealed response differs:\n%x\n%x", again, b[:m])
			}
		case SlotShort:
			// A response may make the client fetch more, never more than
			// a slot for the largest value holds.
			if need <= len(b) || need > RFSFor(mv) {
				t.Fatalf("short response asks for %d bytes, have %d, max %d", need, len(b), RFSFor(mv))
			}
		}
		// What seals parses, and a prefix of it asks for the rest.
		val := b[:min(len(b), mv)]
		slot := make([]byte, RFSFor(len(val)))
		copy(ResponseValue(slot), val)
		size := SealResponse(slot, seq, Status(maxValue&0xf), len(val))
		if st, _ := ParseResponse(slot[:size], seq, mv, &r); st != SlotReady || r.Status != Status(maxValue&0xf) || !bytes.Equal(r.Value, val) {
			t.Fatalf("round trip of %d B: %v", len(val), st)
		}
		if cut := respHeader + int(seq)%(size-respHeader); cut < size {
			if st, need := ParseResponse(slot[:cut], seq, mv, &r); st != SlotShort || need != size {
				t.Fatalf("prefix %d of %d: %v need %d", cut, size, st, need)
			}
		}
	})
}

func FuzzHello(f *testing.F) {
	fuzzseed.Add(f, "valid", Hello{Version: Version, Slots: 16}.Put())
	fuzzseed.Add(f, "other-version", Hello{Version: Version + 1}.Put())
	fuzzseed.Add(f, "http", []byte("GET / HTTP/1.1"))
	fuzzseed.Add(f, "short-magic", []byte{0x4a, 0x4b, 0x52})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHello(b)
		if err != nil {
			return
		}
		if h.Version != Version {
			t.Fatalf("version %d accepted", h.Version)
		}
		again := h.Put() // the header, and the token proof if there is one
		if !bytes.Equal(again, b[:len(again)]) {
			t.Fatalf("re-encoded hello differs: %x vs %x", again, b[:len(again)])
		}
		if len(b) >= 8 {
			h2, err := ParseHello(Hello{Version: Version, Slots: binary.LittleEndian.Uint16(b[6:])}.Put())
			if err != nil || h2.Slots != binary.LittleEndian.Uint16(b[6:]) {
				t.Fatalf("round trip: %v %v", h2, err)
			}
		}
	})
}

func FuzzWelcome(f *testing.F) {
	l, _ := NewLayout(4, 8, 4096)
	good := Welcome{Layout: l, Grant: fabric.Desc{Addr: 4096, Len: uint64(l.Size()), Key: 3}, ClientID: 5}
	fuzzseed.Add(f, "valid", good.Put())
	fuzzseed.Add(f, "one-byte-short", good.Put()[:welcomeSize-1])
	for name, mutate := range map[string]func(*Welcome){
		"zero-slots":          func(w *Welcome) { w.Layout.Slots = 0 },
		"too-many-partitions": func(w *Welcome) { w.Layout.Partitions = MaxPartitions + 1 },
		"negative-max-value":  func(w *Welcome) { w.Layout.MaxValue = -1 },
		"request-slot-small":  func(w *Welcome) { w.Layout.ReqSlot = 63 },
		"grant-too-small":     func(w *Welcome) { w.Grant.Len = uint64(w.Layout.Size()) - 1 },
		// Found by the fuzzer: slots far larger than the max value needs,
		// with a grant to match, made a client allocate terabytes.
		"oversized-slots": func(w *Welcome) {
			w.Layout.Partitions, w.Layout.Slots, w.Layout.RespSlot = MaxPartitions, MaxSlots, 1<<31
			w.Grant.Len = uint64(w.Layout.Size())
		},
	} {
		w := good
		mutate(&w)
		fuzzseed.Add(f, name, w.Put())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := ParseWelcome(b)
		if err != nil {
			return
		}
		if err := w.Layout.Validate(); err != nil {
			t.Fatalf("accepted an invalid layout: %v", err)
		}
		if w.Grant.Len < uint64(w.Layout.Size()) {
			t.Fatalf("grant of %d bytes accepted for a layout of %d", w.Grant.Len, w.Layout.Size())
		}
		// The largest region a server can make a client allocate.
		if most, _ := NewLayout(MaxPartitions, MaxSlots, MaxValueLen); w.Layout.Size() > most.Size() {
			t.Fatalf("layout of %d bytes accepted, the protocol needs at most %d", w.Layout.Size(), most.Size())
		}
		again := w.Put()
		copy(again[5:8], b[5:8]) // padding
		if !bytes.Equal(again, b[:welcomeSize]) {
			t.Fatalf("re-encoded welcome differs:\n%x\n%x", again, b[:welcomeSize])
		}
	})
}

func FuzzControl(f *testing.F) {
	b := make([]byte, ControlSize)
	PutControl(b, fabric.Desc{Addr: 1 << 20, Len: 1 << 16, Key: 77})
	fuzzseed.Add(f, "valid", b)
	fuzzseed.Add(f, "checksum-cut-off", b[:4+fabric.DescSize+sumSize-1])
	torn := bytes.Clone(b)
	torn[10] ^= 1
	fuzzseed.Add(f, "torn", torn)
	fuzzseed.Add(f, "never-written", make([]byte, ControlSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, ok := ParseControl(b)
		if ok {
			again := make([]byte, ControlSize)
			n := PutControl(again, d)
			if !bytes.Equal(again[:n], b[:n]) {
				t.Fatalf("re-encoded control block differs:\n%x\n%x", again[:n], b[:n])
			}
		}
		// What encodes decodes: a descriptor made of the fuzzed bytes.
		var raw [fabric.DescSize]byte
		copy(raw[:], b)
		want, _ := fabric.ParseDesc(raw[:])
		blk := make([]byte, ControlSize)
		PutControl(blk, want)
		if got, ok := ParseControl(blk); !ok || got != want {
			t.Fatalf("round trip of %v: %v %v", want, got, ok)
		}
	})
}

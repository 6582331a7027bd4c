package rfp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/internal/fuzzseed"
)

// Fuzz targets for every decoder of bytes a peer controls: request records
// (the server reads what clients WRITE), response records (the client
// reads what the server left), the handshake's Hello and Welcome, the
// layout a welcome carries, and the control block. Each seeds its corpus in testdata/fuzz with the malformed
// inputs known so far; `make fuzz` runs each for $(FUZZTIME).
//
//	go test ./rfp -run '^$' -fuzz '^FuzzRequestRecord$' -fuzztime 30s

// within reports whether sub aliases a part of b (or is empty).
func within(sub, b []byte) bool {
	if len(sub) == 0 {
		return true
	}
	s := uintptr(unsafe.Pointer(unsafe.SliceData(sub)))
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return s >= lo && s+uintptr(cap(sub)) <= lo+uintptr(len(b))
}

func FuzzRequestRecord(f *testing.F) {
	good := make([]byte, 512)
	h := ReqHeader{Seq: 7, Op: OpPut, Flags: FlagReply, TTL: 60, Budget: 1000}
	n := PutRequest(good, h, []byte("user:42"), []byte("value"))
	end := reqHeader + len("user:42") + len("value") + sumSize // n without padding
	fuzzseed.Add(f, "valid-put", good[:n], uint32(7), uint32(OpPut))
	fuzzseed.Add(f, "valid-unpadded", good[:end], uint32(7), uint32(OpGet))
	fuzzseed.Add(f, "checksum-cut-off", good[:end-1], uint32(7), uint32(1024))
	fuzzseed.Add(f, "shorter-than-marker", good[:reqMarkerLen-1], uint32(7), uint32(1024))
	fuzzseed.Add(f, "other-seq", good, uint32(8), uint32(1024))
	huge := bytes.Clone(good[:n])
	binary.LittleEndian.PutUint16(huge[6:], 0xffff) // key length over MaxKeyLen
	fuzzseed.Add(f, "key-length-over-max", huge, uint32(7), uint32(1024))
	huge = bytes.Clone(good[:n])
	binary.LittleEndian.PutUint32(huge[8:], 0xffffffff) // value length past everything
	fuzzseed.Add(f, "value-length-past-ring", huge, uint32(7), uint32(1024))
	wrap := make([]byte, 64)
	putReqWrap(wrap, 9)
	fuzzseed.Add(f, "wrap-marker", wrap, uint32(9), uint32(opWrap))
	part := make([]byte, 256)
	m := PutRequest(part, ReqHeader{Seq: 3, Op: OpPut, Flags: FlagPart, Total: 5000}, nil, bytes.Repeat([]byte{1}, 100))
	fuzzseed.Add(f, "part", part[:m], uint32(3), uint32(FlagPart)<<8|uint32(OpPut))
	m = PutRequest(part, ReqHeader{Seq: 4, Op: opPiece, Budget: 8000}, nil, nil)
	fuzzseed.Add(f, "piece", part[:m], uint32(4), uint32(opPiece))
	f.Fuzz(func(t *testing.T, b []byte, seq, k uint32) {
		var r Request
		st := ParseRequest(b, seq, &r)
		if len(b) < reqMarkerLen || binary.LittleEndian.Uint32(b) != seq {
			if st != SlotEmpty {
				t.Fatalf("no record %d there, yet %v", seq, st)
			}
		} else {
			klen, vlen := int(binary.LittleEndian.Uint16(b[6:])), int(binary.LittleEndian.Uint32(b[8:]))
			if (klen > MaxKeyLen || reqHeader+klen+vlen+sumSize > len(b)) && st != SlotMalformed {
				t.Fatalf("lengths key %d value %d in %d bytes: %v, want malformed", klen, vlen, len(b), st)
			}
		}
		if st == SlotReady {
			if r.Seq != seq || r.Op == opWrap || len(r.Key) > MaxKeyLen || !within(r.Key, b) || !within(r.Value, b) ||
				r.len > len(b) || r.len < reqHeader+len(r.Key)+len(r.Value)+sumSize {
				t.Fatalf("accepted request out of bounds: seq %d key %d B value %d B len %d of %d", r.Seq, len(r.Key), len(r.Value), r.len, len(b))
			}
			// What decodes encodes back to the same bytes.
			again := make([]byte, RequestLen(r.Key, r.Value))
			PutRequest(again, ReqHeader{Seq: r.Seq, Op: r.Op, Flags: r.Flags, TTL: r.TTL, Budget: r.Budget, Total: r.Total}, r.Key, r.Value)
			m := reqHeader + len(r.Key) + len(r.Value) + sumSize
			if !bytes.Equal(again[:m], b[:m]) {
				t.Fatalf("re-encoded request differs:\n%x\n%x", again[:m], b[:m])
			}
		}
		// What encodes decodes: the fuzzed bytes as key and value.
		key := b[:min(len(b), MaxKeyLen)]
		val := b[len(key):]
		h := ReqHeader{Seq: seq, Op: Op(k), Flags: uint8(k >> 8), TTL: k, Budget: k * 3, Total: k ^ seq}
		buf := make([]byte, RequestLen(key, val)+int(k%64))
		n := PutRequest(buf, h, key, val)
		var back Request
		st = ParseRequest(buf, seq, &back)
		if h.Op == opWrap {
			if st != SlotWrap {
				t.Fatalf("wrap marker parsed as %v", st)
			}
		} else if st != SlotReady || back.Op != h.Op || back.Flags != h.Flags || back.TTL != h.TTL ||
			back.Budget != h.Budget || back.Total != h.Total || back.len != n ||
			!bytes.Equal(back.Key, key) || !bytes.Equal(back.Value, val) {
			t.Fatalf("round trip of key %d B value %d B: %v %+v", len(key), len(val), st, back)
		}
		// A record cut short is never taken.
		if cut := int(k) % n; cut >= reqMarkerLen && cut < reqHeader+len(key)+len(val)+sumSize {
			if st := ParseRequest(buf[:cut], seq, &back); st == SlotReady || st == SlotWrap {
				t.Fatalf("a record cut to %d of %d bytes parsed as %v", cut, n, st)
			}
		}
	})
}

func FuzzResponseRecord(f *testing.F) {
	rec := make([]byte, 256)
	copy(ResponsePayload(rec), "hello")
	n := SealResponse(rec, 9, StatusOK, 0, 5)
	fuzzseed.Add(f, "valid", rec[:n], uint32(9), uint32(1000))
	fuzzseed.Add(f, "fetched-too-little", rec[:n-5], uint32(9), uint32(1000))
	fuzzseed.Add(f, "shorter-than-header", rec[:3], uint32(9), uint32(1000))
	fuzzseed.Add(f, "other-seq", rec[:n], uint32(10), uint32(1000))
	fuzzseed.Add(f, "value-over-max", rec[:n], uint32(9), uint32(4))
	big := bytes.Clone(rec[:n])
	binary.LittleEndian.PutUint32(big[4:], respWord(StatusOK, 0, MaxValueLen)) // claims 1 MiB
	fuzzseed.Add(f, "claims-1MiB", big, uint32(9), uint32(MaxValueLen))
	w := make([]byte, 64)
	SealResponse(w, 11, 0, respWrap, 0)
	fuzzseed.Add(f, "wrap-marker", w, uint32(11), uint32(1000))
	first := make([]byte, 64)
	binary.LittleEndian.PutUint64(ResponsePayload(first), 100000)
	copy(ResponsePayload(first)[8:], "piece")
	n = SealResponse(first, 12, StatusOK, respFirst|respMore, 13)
	fuzzseed.Add(f, "first-piece", first[:n], uint32(12), uint32(1000))
	f.Fuzz(func(t *testing.T, b []byte, seq, maxLen uint32) {
		ml := int(maxLen % (MaxValueLen + 1))
		var r Response
		st, need := ParseResponse(b, seq, ml, &r)
		switch st {
		case SlotReady:
			if len(r.Value) > ml || r.Status > 0xf || r.Flags&respWrap != 0 || !within(r.Value, b) ||
				r.Len != respRecLen(len(r.Value)) {
				t.Fatalf("accepted response out of bounds: %d B (max %d), status %d, flags %x, len %d", len(r.Value), ml, r.Status, r.Flags, r.Len)
			}
			again := make([]byte, respRecLen(len(r.Value)))
			copy(ResponsePayload(again), r.Value)
			SealResponse(again, seq, r.Status, r.Flags, len(r.Value))
			m := respHeader + len(r.Value) + sumSize
			if !bytes.Equal(again[:m], b[:m]) {
				t.Fatalf("re-sealed response differs:\n%x\n%x", again[:m], b[:m])
			}
		case SlotShort:
			// A response may make the client fetch more, never more than
			// a record of the longest payload it allows.
			if need <= len(b) || need > respRecLen(ml) {
				t.Fatalf("short response asks for %d bytes, have %d, max %d", need, len(b), respRecLen(ml))
			}
		case SlotEmpty:
			if len(b) < respHeader || binary.LittleEndian.Uint32(b) == seq {
				t.Fatalf("%d bytes with seq %d there read as empty", len(b), seq)
			}
		}
		// What seals parses, and a prefix of it asks for the rest.
		val := b[:min(len(b), ml)]
		rf := uint8(maxLen>>20) & (respMore | respFirst)
		buf := make([]byte, respRecLen(len(val)))
		copy(ResponsePayload(buf), val)
		size := SealResponse(buf, seq, Status(maxLen&0xf), rf, len(val))
		if st, _ := ParseResponse(buf[:size], seq, ml, &r); st != SlotReady || r.Status != Status(maxLen&0xf) ||
			r.Flags != rf || r.Len != size || !bytes.Equal(r.Value, val) {
			t.Fatalf("round trip of %d B: %v %+v", len(val), st, r)
		}
		whole := respHeader + len(val) + sumSize
		if cut := respHeader + int(seq)%(size-respHeader); cut < whole {
			if st, need := ParseResponse(buf[:cut], seq, ml, &r); st != SlotShort || need != whole {
				t.Fatalf("prefix %d of %d: %v need %d", cut, size, st, need)
			}
		}
		// A wrap marker is one.
		wm := make([]byte, respMarkerLen)
		SealResponse(wm, seq, 0, respWrap, 0)
		if st, _ := ParseResponse(wm, seq, ml, &r); st != SlotWrap {
			t.Fatalf("wrap marker parsed as %v", st)
		}
	})
}

// checkVersionErr: a hello or welcome of another version is refused with
// an error that wraps ErrVersion and names both versions.
func checkVersionErr(t *testing.T, err error, other uint8) {
	t.Helper()
	if !errors.Is(err, ErrVersion) {
		t.Fatalf("version %d: %v, want ErrVersion", other, err)
	}
	if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("version %d", other)) || !strings.Contains(msg, fmt.Sprint(Version)) {
		t.Fatalf("version %d: %q names not both versions", other, msg)
	}
}

func FuzzHello(f *testing.F) {
	fuzzseed.Add(f, "valid", Hello{Version: Version, Slots: 16}.Put())
	fuzzseed.Add(f, "other-version", Hello{Version: Version + 1}.Put())
	fuzzseed.Add(f, "version-1", Hello{Version: 1, Slots: 8}.Put())
	fuzzseed.Add(f, "http", []byte("GET / HTTP/1.1"))
	fuzzseed.Add(f, "short-magic", []byte{0x4a, 0x4b, 0x52})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHello(b)
		if errors.Is(err, ErrVersion) || err == nil && len(b) >= helloSize && b[4] != Version {
			checkVersionErr(t, err, b[4])
		}
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
	l, _ := NewLayout(4, 8, 4096, 0, 0)
	good := Welcome{Layout: l, Grant: fabric.Desc{Addr: 4096, Len: uint64(l.Size()), Key: 3}, ClientID: 5}
	fuzzseed.Add(f, "valid", good.Put())
	fuzzseed.Add(f, "one-byte-short", good.Put()[:welcomeSize-1])
	v1 := good.Put()
	v1[4] = 1
	fuzzseed.Add(f, "version-1", v1)
	for name, mutate := range map[string]func(*Welcome){
		"zero-slots":          func(w *Welcome) { w.Layout.Slots = 0 },
		"too-many-partitions": func(w *Welcome) { w.Layout.Partitions = MaxPartitions + 1 },
		"negative-max-value":  func(w *Welcome) { w.Layout.MaxValue = -1 },
		"request-ring-small":  func(w *Welcome) { w.Layout.ReqRing = MinRing - ringAlign },
		"response-ring-odd":   func(w *Welcome) { w.Layout.RespRing = DefaultResponseRing + 8 },
		"slots-over-ring":     func(w *Welcome) { w.Layout.Slots, w.Layout.RespRing = MaxSlots, MinRing },
		"grant-too-small":     func(w *Welcome) { w.Grant.Len = uint64(w.Layout.Size()) - 1 },
		// Rings far larger than the protocol allows, with a grant to
		// match, would make a client allocate terabytes.
		"oversized-rings": func(w *Welcome) {
			w.Layout.Partitions, w.Layout.Slots, w.Layout.ReqRing, w.Layout.RespRing = MaxPartitions, MaxSlots, 1<<31, 1<<31
			w.Grant.Len = uint64(w.Layout.Size())
		},
	} {
		w := good
		mutate(&w)
		fuzzseed.Add(f, name, w.Put())
	}
	most, err := NewLayout(MaxPartitions, MaxSlots, MaxValueLen, MaxRing, MaxRing)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := ParseWelcome(b)
		if errors.Is(err, ErrVersion) || err == nil && len(b) >= welcomeSize && b[4] != Version {
			checkVersionErr(t, err, b[4])
		}
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
		if w.Layout.Size() > most.Size() {
			t.Fatalf("layout of %d bytes accepted, the protocol needs at most %d", w.Layout.Size(), most.Size())
		}
		again := w.Put()
		copy(again[6:8], b[6:8]) // padding
		if !bytes.Equal(again, b[:welcomeSize]) {
			t.Fatalf("re-encoded welcome differs:\n%x\n%x", again, b[:welcomeSize])
		}
	})
}

// FuzzLayout: Validate takes any fields without panicking, and a layout
// it accepts has room for what the engine and session put in its rings.
func FuzzLayout(f *testing.F) {
	fuzzseed.Add(f, "default", 4, 8, 4096, DefaultRequestRing, DefaultResponseRing)
	fuzzseed.Add(f, "smallest", 1, 1, 0, MinRing, MinRing)
	fuzzseed.Add(f, "largest", MaxPartitions, MaxSlots, MaxValueLen, MaxRing, MaxRing)
	fuzzseed.Add(f, "slots-over-ring", 1, MaxSlots, 1024, MinRing, MinRing)
	fuzzseed.Add(f, "unaligned", 1, 8, 1024, MinRing+8, MinRing)
	fuzzseed.Add(f, "negative", -1, -8, -1024, -MinRing, -1)
	f.Fuzz(func(t *testing.T, partitions, slots, maxValue, reqRing, respRing int) {
		l := Layout{Partitions: partitions, Slots: slots, MaxValue: maxValue, ReqRing: reqRing, RespRing: respRing}
		if l.Validate() != nil {
			return
		}
		most := Layout{MaxPartitions, MaxSlots, MaxValueLen, MaxRing, MaxRing}
		if l.Size() <= ControlSize || l.Size() > most.Size() || l.RespBase(l.Partitions-1)+l.RespRing != l.Size() {
			t.Fatalf("layout %+v: size %d", l, l.Size())
		}
		// A GET of a 32 B value comes back inline; pieces and parts carry
		// payload; a join carries the longest key.
		if l.CallBudget() < 32 || l.pieceBudget() < l.CallBudget() ||
			l.maxReqRecord() < reqRecLen(MaxKeyLen, 0) || l.maxReqRecord()-reqHeader-sumSize-recAlign <= 0 {
			t.Fatalf("layout %+v: budget %d, piece %d, request record %d", l, l.CallBudget(), l.pieceBudget(), l.maxReqRecord())
		}
		// A full window, a piece request and a wrap's waste fit the
		// response ring: the server never overwrites what is not taken.
		if l.Slots*l.callResv()+2*l.pieceResv() > l.RespRing || l.callResv()%recAlign != 0 {
			t.Fatalf("layout %+v: reservations overflow the response ring", l)
		}
		if n, err := NewLayout(partitions, slots, maxValue, reqRing, respRing); err != nil || n != l {
			t.Fatalf("NewLayout(%+v): %+v %v", l, n, err)
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

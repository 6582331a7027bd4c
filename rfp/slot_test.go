package rfp

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestRequestRoundTrip(t *testing.T) {
	l, err := NewLayout(2, 8, 1024)
	if err != nil {
		t.Fatal(err)
	}
	slot := make([]byte, l.ReqSlot)
	var r Request
	if st := ParseRequest(slot, 1, l.MaxValue, &r); st != SlotEmpty {
		t.Fatalf("zeroed slot: %v", st)
	}
	key, val := []byte("user:42"), bytes.Repeat([]byte("v"), 300)
	n := PutRequest(slot, 7, OpPut, FlagReply, key, val, 60)
	if n != RequestLen(key, val) {
		t.Fatalf("len %d want %d", n, RequestLen(key, val))
	}
	if st := ParseRequest(slot, 6, l.MaxValue, &r); st != SlotEmpty {
		t.Fatalf("wrong seq accepted: %v", st)
	}
	if st := ParseRequest(slot, 7, l.MaxValue, &r); st != SlotReady {
		t.Fatalf("ready slot: %v", st)
	}
	if r.Op != OpPut || r.Flags != FlagReply || r.TTL != 60 || !bytes.Equal(r.Key, key) || !bytes.Equal(r.Value, val) {
		t.Fatalf("decoded %+v", r)
	}
}

// A WRITE may land in any order: every partial landing of a new request
// over an old one must be rejected, never decoded.
func TestRequestTornNeverAccepted(t *testing.T) {
	l, _ := NewLayout(1, 8, 256)
	old := make([]byte, l.ReqSlot)
	PutRequest(old, 3, OpGet, 0, []byte("aaaa"), nil, 0)
	nu := make([]byte, l.ReqSlot)
	n := PutRequest(nu, 11, OpPut, 0, []byte("bbbbbbbb"), bytes.Repeat([]byte{1}, 200), 0)
	rng := rand.New(rand.NewPCG(1, 2))
	var r Request
	for i := 0; i < 20000; i++ {
		slot := append([]byte(nil), old...)
		// land a random subset of the new bytes, always including the seq
		copy(slot[:4], nu[:4])
		for j := 4; j < n; j++ {
			if rng.IntN(100) < 97 {
				slot[j] = nu[j]
			}
		}
		complete := bytes.Equal(slot[:n], nu[:n])
		st := ParseRequest(slot, 11, l.MaxValue, &r)
		if st == SlotReady && !complete {
			t.Fatalf("torn request accepted at iteration %d", i)
		}
		if complete && st != SlotReady {
			t.Fatalf("complete request not accepted: %v", st)
		}
	}
}

func TestRequestMalformed(t *testing.T) {
	l, _ := NewLayout(1, 8, 64)
	slot := make([]byte, l.ReqSlot)
	PutRequest(slot, 1, OpGet, 0, []byte("k"), nil, 0)
	slot[8] = 0xff // value length beyond MaxValue
	var r Request
	if st := ParseRequest(slot, 1, l.MaxValue, &r); st != SlotMalformed {
		t.Fatalf("got %v", st)
	}
	if st := ParseRequest(slot[:10], 1, l.MaxValue, &r); st != SlotEmpty {
		t.Fatalf("short slot: %v", st)
	}
}

func TestResponseFetch(t *testing.T) {
	l, _ := NewLayout(1, 8, 1000)
	slot := make([]byte, l.RespSlot)
	val := bytes.Repeat([]byte("x"), 100)
	copy(ResponseValue(slot), val)
	size := SealResponse(slot, 9, StatusOK, len(val))
	if size != RFSFor(100) {
		t.Fatalf("size %d", size)
	}
	var r Response
	if st, _ := ParseResponse(slot[:RFSFor(32)], 8, l.MaxValue, &r); st != SlotEmpty {
		t.Fatalf("wrong seq: %v", st)
	}
	st, need := ParseResponse(slot[:RFSFor(32)], 9, l.MaxValue, &r)
	if st != SlotShort || need != RFSFor(100) {
		t.Fatalf("short fetch: %v need %d", st, need)
	}
	if st, _ := ParseResponse(slot[:need], 9, l.MaxValue, &r); st != SlotReady || !bytes.Equal(r.Value, val) {
		t.Fatalf("full fetch: %v %q", st, r.Value)
	}
	slot[50] ^= 1
	if st, _ := ParseResponse(slot[:need], 9, l.MaxValue, &r); st != SlotTorn {
		t.Fatalf("corrupt value accepted: %v", st)
	}
	PoisonResponse(slot, 9)
	if st, _ := ParseResponse(slot, 9, l.MaxValue, &r); st != SlotEmpty {
		t.Fatalf("poisoned slot: %v", st)
	}
}

func TestRFS40For32ByteValues(t *testing.T) {
	if RFSFor(32) != 40 {
		t.Fatalf("RFSFor(32) = %d", RFSFor(32))
	}
}

func TestHandshakeCodecs(t *testing.T) {
	h, err := ParseHello(Hello{Version: Version, Slots: 16}.Put())
	if err != nil || h.Slots != 16 {
		t.Fatal(h, err)
	}
	if _, err := ParseHello([]byte("GET / HTTP/1.1")); err == nil {
		t.Fatal("garbage hello accepted")
	}
	l, _ := NewLayout(4, 8, 4096)
	w := Welcome{Layout: l, ClientID: 5}
	w.Grant.Len = uint64(l.Size())
	w2, err := ParseWelcome(w.Put())
	if err != nil || w2.Layout != l || w2.ClientID != 5 {
		t.Fatal(w2, err)
	}
	bad := w.Put()
	bad[12] = 0 // zero slots
	if _, err := ParseWelcome(bad); err == nil {
		t.Fatal("bad layout accepted")
	}
}

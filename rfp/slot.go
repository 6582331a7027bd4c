package rfp

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// Slot codecs. A slot's checksum covers its body (key, value) and is keyed
// by its header words, so the header can be stored last, in one store.

const mix = 0x9E3779B97F4A7C15

func fold(h uint64) uint32 { return uint32(h) ^ uint32(h>>32) }

func sealSum(body []byte, h0, h1 uint64) uint32 {
	return fold(xxhash.Sum64(body) ^ h0*mix ^ (h1+1)*(mix>>1))
}

// storeHeader32 publishes a 4-byte header after the body: an atomic store so
// the compiler keeps it last; the fabric may still show it torn, which the
// checksum catches.
func storeHeader32(b []byte, v uint32) {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&b[0])), v)
}

func loadHeader32(b []byte) uint32 {
	if uintptr(unsafe.Pointer(&b[0]))%4 == 0 {
		return atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[0])))
	}
	return binary.LittleEndian.Uint32(b)
}

// ---- requests ----

// RequestLen is the encoded size of a request.
func RequestLen(key, value []byte) int { return reqHeader + len(key) + len(value) + sumSize }

// PutRequest encodes a request into b (len(b) >= RequestLen) and returns
// its length. The caller WRITEs b[:n] into the request slot.
func PutRequest(b []byte, seq uint32, op Op, flags uint8, key, value []byte, ttl uint32) int {
	le := binary.LittleEndian
	n := reqHeader + len(key) + len(value)
	le.PutUint32(b[0:], seq)
	b[4], b[5] = byte(op), flags
	le.PutUint16(b[6:], uint16(len(key)))
	le.PutUint32(b[8:], uint32(len(value)))
	le.PutUint32(b[12:], ttl)
	copy(b[reqHeader:], key)
	copy(b[reqHeader+len(key):], value)
	h0, h1 := le.Uint64(b[0:]), le.Uint64(b[8:])
	le.PutUint32(b[n:], sealSum(b[reqHeader:n], h0, h1))
	return n + sumSize
}

// Request is a decoded request. Key and Value alias the slot.
type Request struct {
	Seq   uint32
	Op    Op
	Flags uint8
	TTL   uint32
	Key   []byte
	Value []byte
}

// SlotState is what a reader found in a slot.
type SlotState uint8

const (
	// SlotEmpty: the expected sequence number is not there yet.
	SlotEmpty SlotState = iota
	// SlotTorn: the sequence number is there but the checksum does not
	// match (yet): a WRITE still landing, or garbage.
	SlotTorn
	// SlotMalformed: sequence number there, lengths impossible.
	SlotMalformed
	// SlotReady: complete and valid.
	SlotReady
	// SlotShort: a response longer than what was fetched; fetch more.
	SlotShort
)

// ParseRequest examines a request slot (the whole slot) for the request
// with sequence number seq.
func ParseRequest(slot []byte, seq uint32, maxValue int, r *Request) SlotState {
	le := binary.LittleEndian
	if len(slot) < reqHeader+sumSize || loadHeader32(slot) != seq {
		return SlotEmpty
	}
	h0, h1 := le.Uint64(slot[0:]), le.Uint64(slot[8:])
	klen, vlen := int(le.Uint16(slot[6:])), int(le.Uint32(slot[8:]))
	if klen > MaxKeyLen || vlen > maxValue || reqHeader+klen+vlen+sumSize > len(slot) {
		return SlotMalformed
	}
	n := reqHeader + klen + vlen
	if le.Uint32(slot[n:]) != sealSum(slot[reqHeader:n], h0, h1) {
		return SlotTorn
	}
	// Decode from the header words the checksum covered, not from the
	// slot again: a hostile client may be rewriting it under us.
	*r = Request{
		Seq:   seq,
		Op:    Op(h0 >> 32),
		Flags: uint8(h0 >> 40),
		TTL:   uint32(h1 >> 32),
		Key:   slot[reqHeader : reqHeader+klen : reqHeader+klen],
		Value: slot[reqHeader+klen : n : n],
	}
	return SlotReady
}

// ---- responses ----

func respHeaderWord(seq uint32, st Status, n int) uint32 {
	return uint32(uint8(seq)) | uint32(st&0xf)<<8 | uint32(n)<<12
}

// ResponseValue is where the server puts a response value before sealing:
// the slot's value area.
func ResponseValue(slot []byte) []byte { return slot[respHeader : len(slot)-sumSize] }

// SealResponse finishes a response whose value (n bytes) is already in
// ResponseValue(slot): checksum, then the header, last. It returns the
// response's length (what a reply-mode WRITE must carry).
func SealResponse(slot []byte, seq uint32, st Status, n int) int {
	hdr := respHeaderWord(seq, st, n)
	end := respHeader + n
	binary.LittleEndian.PutUint32(slot[end:], sealSum(slot[respHeader:end], uint64(hdr), 0))
	storeHeader32(slot, hdr)
	return end + sumSize
}

// PoisonResponse makes a slot's header differ from the one for seq, so a
// stale response left in local memory can never pass for it.
func PoisonResponse(slot []byte, seq uint32) {
	storeHeader32(slot, uint32(uint8(seq)+0x80))
}

// Response is a decoded response. Value aliases the buffer it was parsed from.
type Response struct {
	Status Status
	Value  []byte
}

// ParseResponse examines b, the first len(b) bytes of a response slot, for
// the response to request seq. It returns SlotReady with r filled, SlotEmpty
// when the result is not there yet, SlotTorn when it must be read again, or
// SlotShort with need > len(b) when the value is longer than what was
// fetched: read the slot up to need bytes and parse again.
func ParseResponse(b []byte, seq uint32, maxValue int, r *Response) (st SlotState, need int) {
	if len(b) < respHeader {
		return SlotEmpty, MinRFS
	}
	hdr := loadHeader32(b)
	if uint8(hdr) != uint8(seq) {
		return SlotEmpty, 0
	}
	n := int(hdr >> 12)
	if n > maxValue {
		return SlotTorn, 0
	}
	end := respHeader + n
	if end+sumSize > len(b) {
		return SlotShort, end + sumSize
	}
	if binary.LittleEndian.Uint32(b[end:]) != sealSum(b[respHeader:end], uint64(hdr), 0) {
		return SlotTorn, 0
	}
	r.Status = Status(hdr>>8) & 0xf
	r.Value = b[respHeader:end:end]
	return SlotReady, 0
}

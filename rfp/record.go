package rfp

import (
	"encoding/binary"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// Record codecs. Rings carry variable-length records, each starting on a
// cache line (64 B) and never split at a ring's end: a record that does
// not fit before the end goes to the ring's start, and the writer leaves
// a wrap marker where it would have gone (none when fewer bytes remain
// than the smallest record: then the reader skips them too). A record's
// checksum covers its body and is keyed by its header words, so the
// header is stored last, the sequence number in one atomic store.
//
//	request:  seq u32 | op u8 | flags u8 | klen u16 | vlen u32 | ttl u32 | budget u32 | total u32 | key | value | sum u32
//	response: seq u32 | status u4 | rflags u4 | len u24 | payload | sum u32
//
// budget is the longest response value the client has room for; a longer
// one comes in pieces (rflags respMore), fetched with opPiece requests.
// total is the whole value's length of a request sent in parts (FlagPart
// records, then a FlagJoin record with the key).
//
// Cache lines, not 8 bytes (protocol version 3): a small record then
// lies in one line, which the writer's and the reader's cores hand over
// once, and the next record is never in the line a reader is reading.
// On shm, where a record crosses cores as lines, one GET at a time in
// reply mode took ~20% less time (2 cores, 3 interleaved runs, medians of
// 200k GETs each: 1.28/1.16/1.10 against 1.73/1.48/1.37 µs); a record
// pads at most 63 B.

const (
	recAlign   = 64
	reqHeader  = 24
	respHeader = 8
	sumSize    = 4
	// The smallest records: a header and a checksum, on one line.
	reqMarkerLen  = (reqHeader + sumSize + recAlign - 1) / recAlign * recAlign
	respMarkerLen = (respHeader + sumSize + recAlign - 1) / recAlign * recAlign
	// opWrap marks the end of a lap in a request ring.
	opWrap Op = 0xff
	// opPiece asks for the next piece of a long response (internal).
	opPiece Op = 0xfe
)

// Response record flags.
const (
	respWrap  = 1 << iota // a wrap marker: the next record is at the ring's start
	respMore              // a piece of a long value; more pieces follow
	respFirst             // the first piece: the payload starts with the total length (u32, u32 pad)
)

func align(n, a int) int { return (n + a - 1) / a * a }

func reqRecLen(klen, vlen int) int { return align(reqHeader+klen+vlen+sumSize, recAlign) }
func respRecLen(n int) int         { return align(respHeader+n+sumSize, recAlign) }

const mix = 0x9E3779B97F4A7C15

func fold(h uint64) uint32 { return uint32(h) ^ uint32(h>>32) }

func sealSum(body []byte, h0, h1 uint64) uint32 {
	return fold(xxhash.Sum64(body) ^ h0*mix ^ (h1+1)*(mix>>1))
}

// storeSeq publishes a record's sequence number after everything else: an
// atomic store so the compiler keeps it last; the fabric may still show
// it torn, which the checksum catches.
func storeSeq(b []byte, v uint32) {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&b[0])), v)
}

func loadSeq(b []byte) uint32 {
	if uintptr(unsafe.Pointer(&b[0]))%4 == 0 {
		return atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[0])))
	}
	return binary.LittleEndian.Uint32(b)
}

// SlotState is what a reader found at a ring position.
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
	// SlotShort: a record longer than what was fetched; fetch more.
	SlotShort
	// SlotWrap: a valid wrap marker: the record is at the ring's start.
	SlotWrap
)

// ---- requests ----

// ReqHeader is a request record's header fields.
type ReqHeader struct {
	Seq    uint32
	Op     Op
	Flags  uint8
	TTL    uint32
	Budget uint32 // longest response value inline
	Total  uint32 // parts and joins: the whole value's length
}

// RequestLen is the record length of a request.
func RequestLen(key, value []byte) int { return reqRecLen(len(key), len(value)) }

func reqWords(b []byte) (h0, h1 uint64) {
	le := binary.LittleEndian
	return le.Uint64(b[0:]), le.Uint64(b[8:]) ^ bits.RotateLeft64(le.Uint64(b[16:]), 29)
}

// PutRequest encodes a request record into b (len(b) >= RequestLen) and
// returns its length. The caller WRITEs b[:n] into the request ring.
func PutRequest(b []byte, h ReqHeader, key, value []byte) int {
	le := binary.LittleEndian
	n := reqHeader + len(key) + len(value)
	le.PutUint32(b[4:], uint32(h.Op)|uint32(h.Flags)<<8|uint32(len(key))<<16)
	le.PutUint32(b[8:], uint32(len(value)))
	le.PutUint32(b[12:], h.TTL)
	le.PutUint32(b[16:], h.Budget)
	le.PutUint32(b[20:], h.Total)
	copy(b[reqHeader:], key)
	copy(b[reqHeader+len(key):], value)
	le.PutUint32(b[0:], h.Seq)
	h0, h1 := reqWords(b)
	le.PutUint32(b[n:], sealSum(b[reqHeader:n], h0, h1))
	return align(n+sumSize, recAlign)
}

// putReqWrap writes a wrap marker for seq into b (len(b) >= reqMarkerLen).
func putReqWrap(b []byte, seq uint32) {
	PutRequest(b, ReqHeader{Seq: seq, Op: opWrap}, nil, nil)
}

// Request is a decoded request. Key and Value alias the ring (or the
// session's buffer of a request sent in parts).
type Request struct {
	Seq    uint32
	Op     Op
	Flags  uint8
	TTL    uint32
	Budget uint32
	Total  uint32
	Key    []byte
	Value  []byte
	at     uint64 // its position in the request ring
	len    int    // record length in the ring
}

// ParseRequest examines b, the request ring from a record's position to
// the ring's end, for the record with sequence number seq.
func ParseRequest(b []byte, seq uint32, r *Request) SlotState {
	le := binary.LittleEndian
	if len(b) < reqMarkerLen || loadSeq(b) != seq {
		return SlotEmpty
	}
	h0, h1 := reqWords(b)
	w := uint32(h0 >> 32)
	klen, vlen := int(w>>16), int(le.Uint32(b[8:]))
	if klen > MaxKeyLen || vlen > len(b) || reqHeader+klen+vlen+sumSize > len(b) {
		return SlotMalformed
	}
	n := reqHeader + klen + vlen
	if le.Uint32(b[n:]) != sealSum(b[reqHeader:n], h0, h1) {
		return SlotTorn
	}
	op := Op(w)
	if op == opWrap {
		return SlotWrap
	}
	// Decode from the words the checksum covered, not from the ring again:
	// a hostile client may be rewriting it under us.
	*r = Request{
		Seq:    seq,
		Op:     op,
		Flags:  uint8(w >> 8),
		TTL:    le.Uint32(b[12:]),
		Budget: le.Uint32(b[16:]),
		Total:  le.Uint32(b[20:]),
		Key:    b[reqHeader : reqHeader+klen : reqHeader+klen],
		Value:  b[reqHeader+klen : n : n],
		len:    align(n+sumSize, recAlign),
	}
	if r.len > len(b) {
		r.len = len(b) // the last record of a ring: its padding is the ring's end
	}
	return SlotReady
}

// ---- responses ----

func respWord(st Status, rflags uint8, n int) uint32 {
	return uint32(st&0xf) | uint32(rflags&0xf)<<4 | uint32(n)<<8
}

// SealResponse finishes a response record whose payload (n bytes) is
// already at b[respHeader:]: checksum, then the header, sequence last. It
// returns the record's length.
func SealResponse(b []byte, seq uint32, st Status, rflags uint8, n int) int {
	le := binary.LittleEndian
	w := respWord(st, rflags, n)
	end := respHeader + n
	le.PutUint32(b[4:], w)
	le.PutUint32(b[end:], sealSum(b[respHeader:end], uint64(seq)|uint64(w)<<32, 0))
	storeSeq(b, seq)
	return align(end+sumSize, recAlign)
}

// ResponsePayload is where a response's payload goes in a record at b.
func ResponsePayload(b []byte) []byte { return b[respHeader:] }

// Response is a decoded response. Value aliases the buffer it was parsed from.
type Response struct {
	Status Status
	Flags  uint8 // respMore, respFirst
	Value  []byte
	Len    int // record length
}

// ParseResponse examines b, the bytes fetched from a record's position
// (at most to the ring's end), for the response to request seq whose
// payload can be at most maxLen bytes. It returns SlotReady with r filled,
// SlotWrap for a wrap marker, SlotEmpty when the response is not there
// yet, SlotTorn when it must be read again, or SlotShort with need >
// len(b) when the record is longer than what was fetched.
func ParseResponse(b []byte, seq uint32, maxLen int, r *Response) (st SlotState, need int) {
	if len(b) < respHeader {
		return SlotShort, respMarkerLen
	}
	if loadSeq(b) != seq {
		return SlotEmpty, 0
	}
	le := binary.LittleEndian
	w := le.Uint32(b[4:])
	n := int(w >> 8)
	if n > maxLen {
		return SlotTorn, 0
	}
	end := respHeader + n
	if end+sumSize > len(b) {
		return SlotShort, end + sumSize
	}
	if le.Uint32(b[end:]) != sealSum(b[respHeader:end], uint64(seq)|uint64(w)<<32, 0) {
		return SlotTorn, 0
	}
	rf := uint8(w>>4) & 0xf
	if rf&respWrap != 0 {
		return SlotWrap, 0
	}
	*r = Response{Status: Status(w & 0xf), Flags: rf, Value: b[respHeader:end:end], Len: align(end+sumSize, recAlign)}
	return SlotReady, 0
}

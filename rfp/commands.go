package rfp

import "encoding/binary"

// The memcached commands ride in the request format unchanged: a command's
// arguments beyond key, value and TTL (its extras, as in memcached's binary
// protocol) lead the request's value, and its results beyond the status
// (version, flags, a counter) lead the response's value. GET, PUT and
// DELETE are untouched, so their records and fetch sizes stay as they were.
//
//	OpGets, OpGat  request: key (OpGat: TTL)          response: meta | value
//	OpTouch        request: key, TTL                  response: meta
//	OpStore        request: key, TTL, store | value  response: version u64
//	OpIncr         request: key, TTL, incr            response: number u64 | version u64
//	OpFlush        request: TTL = delay (any key)     response: empty
//
//	meta:  version u64 | flags u32
//	store: mode u8 | flags u32 | cas u64
//	incr:  decr u8 | create u8 | delta u64 | initial u64 | flags u32
//
// All little-endian. Parse functions bounds-check: peer bytes never panic.

// Extras and result lengths.
const (
	MetaLen       = 12
	StoreExtraLen = 13
	IncrExtraLen  = 22
	IncrResultLen = 16
)

// Store modes, as kv.StoreMode.
const (
	StoreSet uint8 = iota
	StoreAdd
	StoreReplace
	StoreAppend
	StorePrepend
	maxStoreMode
)

var le = binary.LittleEndian

// PutMeta writes a version and flags into b[:MetaLen].
func PutMeta(b []byte, version uint64, flags uint32) {
	le.PutUint64(b, version)
	le.PutUint32(b[8:], flags)
}

// ParseMeta splits a Gets, Gat or Touch response value.
func ParseMeta(v []byte) (version uint64, flags uint32, value []byte, ok bool) {
	if len(v) < MetaLen {
		return 0, 0, nil, false
	}
	return le.Uint64(v), le.Uint32(v[8:]), v[MetaLen:], true
}

// StoreArgs are OpStore's extras.
type StoreArgs struct {
	Mode  uint8
	Flags uint32
	CAS   uint64 // 0: unconditional
}

// PutStoreArgs writes a into b[:StoreExtraLen].
func PutStoreArgs(b []byte, a StoreArgs) {
	b[0] = a.Mode
	le.PutUint32(b[1:], a.Flags)
	le.PutUint64(b[5:], a.CAS)
}

// ParseStoreArgs splits an OpStore request value into its extras and the
// value to store.
func ParseStoreArgs(v []byte) (a StoreArgs, value []byte, ok bool) {
	if len(v) < StoreExtraLen || v[0] >= maxStoreMode {
		return StoreArgs{}, nil, false
	}
	return StoreArgs{v[0], le.Uint32(v[1:]), le.Uint64(v[5:])}, v[StoreExtraLen:], true
}

// IncrArgs are OpIncr's extras.
type IncrArgs struct {
	Decr    bool
	Create  bool   // store Initial if the key is missing
	Delta   uint64 // added, or subtracted with Decr
	Initial uint64
	Flags   uint32 // of a created item
}

// PutIncrArgs writes a into b[:IncrExtraLen].
func PutIncrArgs(b []byte, a IncrArgs) {
	b[0], b[1] = boolByte(a.Decr), boolByte(a.Create)
	le.PutUint64(b[2:], a.Delta)
	le.PutUint64(b[10:], a.Initial)
	le.PutUint32(b[18:], a.Flags)
}

// ParseIncrArgs decodes an OpIncr request value.
func ParseIncrArgs(v []byte) (a IncrArgs, ok bool) {
	if len(v) != IncrExtraLen || v[0] > 1 || v[1] > 1 {
		return IncrArgs{}, false
	}
	return IncrArgs{v[0] == 1, v[1] == 1, le.Uint64(v[2:]), le.Uint64(v[10:]), le.Uint32(v[18:])}, true
}

// PutIncrResult writes an OpIncr response value into b[:IncrResultLen].
func PutIncrResult(b []byte, n, version uint64) {
	le.PutUint64(b, n)
	le.PutUint64(b[8:], version)
}

// ParseIncrResult decodes an OpIncr response value.
func ParseIncrResult(v []byte) (n, version uint64, ok bool) {
	if len(v) != IncrResultLen {
		return 0, 0, false
	}
	return le.Uint64(v), le.Uint64(v[8:]), true
}

// PutVersion writes an OpStore response value into b[:8].
func PutVersion(b []byte, version uint64) { le.PutUint64(b, version) }

// ParseVersion decodes an OpStore response value.
func ParseVersion(v []byte) (uint64, bool) {
	if len(v) != 8 {
		return 0, false
	}
	return le.Uint64(v), true
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

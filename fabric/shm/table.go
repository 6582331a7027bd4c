package shm

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/jakiro-kv/jakiro/fabric"
)

// Domain table layout, at offset 0 of every domain memfd. Slot 0 is the
// header; slots 1.. describe registered regions. A region's key carries
// its slot in the low bits and random bits above, so the initiator finds
// the entry in O(1) and a stale or foreign key almost surely misses.
//
//	header: magic u64 | version u32 | slots u32 | entrySize u32
//	entry:  key u32 | pad u32 | off u64 | len u64 | pad u64
const (
	slotBits   = 10
	tableSlots = 1 << slotBits
	entrySize  = 32
	tableSize  = tableSlots * entrySize // a multiple of pageSize

	tableMagic   = 0x4d4f444d48534b4a // "JKSHMDOM" little endian
	tableVersion = 1
)

func writeHeader(mem []byte) {
	binary.LittleEndian.PutUint64(mem[0:], tableMagic)
	binary.LittleEndian.PutUint32(mem[8:], tableVersion)
	binary.LittleEndian.PutUint32(mem[12:], tableSlots)
	binary.LittleEndian.PutUint32(mem[16:], entrySize)
}

// checkHeader validates a peer's domain before it is used.
func checkHeader(mem []byte) error {
	if len(mem) < tableSize {
		return fmt.Errorf("shm: peer domain of %d bytes is smaller than its table", len(mem))
	}
	if m := binary.LittleEndian.Uint64(mem[0:]); m != tableMagic {
		return fmt.Errorf("shm: peer domain has bad magic %#x", m)
	}
	v, s, e := binary.LittleEndian.Uint32(mem[8:]), binary.LittleEndian.Uint32(mem[12:]), binary.LittleEndian.Uint32(mem[16:])
	if v != tableVersion || s != tableSlots || e != entrySize {
		return fmt.Errorf("shm: peer domain table version %d slots %d entry %d, want %d %d %d", v, s, e, tableVersion, tableSlots, entrySize)
	}
	return nil
}

// The table is shared with a peer in another process: entries are
// accessed with atomics so neither side sees a half-written word.
func entryKey(mem []byte, slot int) *uint32 {
	return (*uint32)(unsafe.Pointer(&mem[slot*entrySize]))
}
func entryOff(mem []byte, slot int) *uint64 {
	return (*uint64)(unsafe.Pointer(&mem[slot*entrySize+8]))
}
func entryLen(mem []byte, slot int) *uint64 {
	return (*uint64)(unsafe.Pointer(&mem[slot*entrySize+16]))
}

// publish records a region; the key is stored last so a reader that sees
// it sees the extent too.
func publish(mem []byte, slot int, key uint32, off, n uint64) {
	atomic.StoreUint64(entryOff(mem, slot), off)
	atomic.StoreUint64(entryLen(mem, slot), n)
	atomic.StoreUint32(entryKey(mem, slot), key)
}

func unpublish(mem []byte, slot int) {
	atomic.StoreUint32(entryKey(mem, slot), 0)
}

// errOutsideMapping is the remote access error for a region the peer
// registered where this side has not mapped its domain: an acceptor maps
// only its own DomainSize of a dialer's region area (mapPeer).
var errOutsideMapping = fmt.Errorf("%w: shm: the peer's region lies beyond the part of its domain mapped here (an acceptor reaches at most its own Options.DomainSize of a dialer's domain)", fabric.ErrRemoteAccess)

// lookup validates a one-sided access of n bytes at d.Addr+roff in the peer
// domain mem and returns the bytes, or an error that is
// fabric.ErrRemoteAccess (errOutsideMapping where the registered region
// does not lie inside mem). mem (the peer mapping, at least tableSize
// long, possibly only a window of the peer's domain) is untrusted: the
// result is always within mem[tableSize:], whatever the peer wrote.
func lookup(mem []byte, d fabric.Desc, roff uint64, n int) ([]byte, error) {
	slot := int(d.Key & (tableSlots - 1))
	if slot == 0 || d.Key == 0 {
		return nil, fabric.ErrRemoteAccess
	}
	if atomic.LoadUint32(entryKey(mem, slot)) != d.Key {
		return nil, fabric.ErrRemoteAccess
	}
	off := atomic.LoadUint64(entryOff(mem, slot))
	ln := atomic.LoadUint64(entryLen(mem, slot))
	size := uint64(len(mem))
	// The registered extent must lie inside the peer's region area, as
	// far as it is mapped here.
	if off < tableSize {
		return nil, fabric.ErrRemoteAccess
	}
	if off > size || ln > size-off {
		return nil, errOutsideMapping
	}
	start := d.Addr + roff
	if start < d.Addr || n < 0 { // overflow
		return nil, fabric.ErrRemoteAccess
	}
	if start < off || start-off > ln || uint64(n) > ln-(start-off) {
		return nil, fabric.ErrRemoteAccess
	}
	return mem[start : start+uint64(n) : start+uint64(n)], nil
}

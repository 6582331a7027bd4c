package kv

import (
	"encoding/binary"
	"unsafe"
)

// prefetchAhead is how far ahead of the log head appendItem prefetches.
const prefetchAhead = 512

// An item in the log:
//
//	[mark u8][keylen u8][uvarint vallen<<1 | ttl][expiry u32 LE, if ttl][key][value]
//
// A value under 64 bytes without a TTL has a 3-byte header. The mark byte
// is markLive while the item is counted in Stats.Items and Stats.Bytes,
// which lets the log head account for the items it overwrites without
// touching the index; markGone once it is not (deleted, expired, moved or
// superseded).
const (
	markGone = 0
	markLive = 1
)

// itemSize is the log footprint of an item.
func itemSize(klen, vlen int, ttl bool) uint64 {
	x := uint64(vlen) << 1
	n := uint64(2+klen+vlen) + uvarintLen(x)
	if ttl {
		n += 4
	}
	return n
}

func uvarintLen(x uint64) uint64 {
	n := uint64(1)
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// item is a decoded item header.
type item struct {
	mark byte
	ttl  bool
	klen int
	vlen int
	hlen int // header length: the key starts at hlen
	exp  uint32
}

func (it *item) size() uint64 { return uint64(it.hlen + it.klen + it.vlen) }

// decode reads the header at the start of r.
func decode(r []byte) item {
	x, h := uint32(r[2]), 3
	if x >= 0x80 {
		x, h = decodeLong(r)
	}
	it := item{mark: r[0], klen: int(r[1]), vlen: int(x >> 1), hlen: h, ttl: x&1 != 0}
	if it.ttl {
		it.exp = binary.LittleEndian.Uint32(r[h:])
		it.hlen += 4
	}
	return it
}

// decodeLong decodes a value length of more than one byte.
func decodeLong(r []byte) (uint32, int) {
	var x uint32
	for i := 0; i < 5; i++ {
		c := r[2+i]
		x |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return x, 3 + i
		}
	}
	return x, 7 // not reached: lengths are below 2^31
}

// phys maps a live offset (head <= off <= tail) to its position in the
// arena.
func (p *Partition) phys(off uint64) uint64 {
	d := p.tail - off
	if d <= p.tailPhys {
		return p.tailPhys - d
	}
	return p.tailPhys + p.cap - d
}

// at returns the log from the item at off onwards.
func (p *Partition) at(off uint64) []byte { return p.log[p.phys(off):] }

// dropItem marks the live item at off gone and takes it out of the counts.
func (p *Partition) dropItem(off uint64) {
	r := p.at(off)
	it := decode(r)
	r[0] = markGone
	p.st.Items--
	p.st.Bytes -= it.size()
}

// appendItem makes room for and writes a live item at the tail, counts it
// and returns its offset. In cache mode making room overwrites the oldest
// items; in store mode it cleans the head, which the caller has made sure
// can succeed (see Put).
func (p *Partition) appendItem(key, val []byte, ttl bool, exp uint32) uint64 {
	size := itemSize(len(key), len(val), ttl)
	if p.mode == ModeCache {
		for p.tail+size-p.head > p.cap {
			p.evictHead()
		}
		// The head moves through the arena sequentially, and the tail
		// right behind it: fetch the lines it reaches next.
		if ahead := p.headPhys + prefetchAhead; ahead < uint64(len(p.log)) {
			prefetch(uintptr(unsafe.Pointer(&p.log[ahead])))
		}
	} else {
		// Keep one maximum item free so a live item at the head can always
		// be moved to the tail.
		for p.cap-(p.tail-p.head) < size+p.maxRecord {
			p.cleanHead()
		}
	}
	off := p.tail
	r := p.log[p.tailPhys : p.tailPhys+size]
	x := uint32(len(val)) << 1
	if ttl {
		x |= 1
	}
	r[0] = markLive
	r[1] = byte(len(key))
	h := 3
	if x < 0x80 {
		r[2] = byte(x)
	} else {
		h = 2 + binary.PutUvarint(r[2:], uint64(x))
	}
	if ttl {
		binary.LittleEndian.PutUint32(r[h:h+4], exp)
		h += 4
	}
	copy(r[h:], key)
	copy(r[h+len(key):], val)
	p.advanceTail(size)
	p.st.Items++
	p.st.Bytes += size
	return off
}

func (p *Partition) advanceTail(n uint64) {
	p.tail += n
	p.tailPhys += n
	if p.tailPhys >= p.cap {
		p.tailPhys -= p.cap
	}
}

func (p *Partition) advanceHead(n uint64) {
	p.head += n
	p.headPhys += n
	if p.headPhys >= p.cap {
		p.headPhys -= p.cap
	}
}

// evictHead (cache mode) drops the oldest item. Its slot, if any, is now
// dead: its offset is before the head.
func (p *Partition) evictHead() {
	it := decode(p.log[p.headPhys:])
	size := it.size()
	if it.mark == markLive {
		p.st.Items--
		p.st.Bytes -= size
		if it.ttl && p.now() >= it.exp {
			p.st.Expired++
		} else {
			p.st.Evictions++
		}
	}
	p.advanceHead(size)
}

// cleanHead (store mode) reclaims the oldest item: a gone one is skipped,
// an expired one dropped, a live one moved to the tail. The caller keeps
// at least one maximum item free, so the move always fits.
func (p *Partition) cleanHead() {
	r := p.log[p.headPhys:]
	it := decode(r)
	size := it.size()
	if it.mark == markLive {
		key := r[it.hlen : it.hlen+it.klen]
		h := p.hashFn(key)
		wi := p.slotOf(h, p.head)
		switch {
		case wi < 0:
			// No slot points here: only possible if a caller passed a hash
			// other than Hash(key). The item is unreachable; drop it.
			p.st.Items--
			p.st.Bytes -= size
		case it.ttl && p.now() >= it.exp:
			// Clear the slot but do not compact: the Put that is making
			// room holds a slot position in some chain.
			p.idx[wi] = 0
			p.st.Items--
			p.st.Bytes -= size
			p.st.Expired++
		default:
			off := p.tail
			copy(p.log[p.tailPhys:p.tailPhys+size], r[:size])
			p.advanceTail(size)
			p.idx[wi] = tagOf(h)<<tagShift | off&offMask
		}
	}
	p.advanceHead(size)
}

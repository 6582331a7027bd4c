package kv

import (
	"encoding/binary"
	"unsafe"
)

// An item in the log:
//
//	[mark u8][keylen u8][uvarint vallen<<1 | ttl][flags u32 LE, if markFlags]
//	[version u64 LE, if markVersion][atime u32 LE, if markAtime]
//	[expiry u32 LE, if ttl][key][value]
//
// A value under 64 bytes without a TTL, flags, explicit version or access
// time has a 3-byte header. The mark byte's markLive bit is set while the
// item is counted in Stats.Items and Stats.Bytes, which lets the log head
// account for the items it overwrites without touching the index, and
// cleared once it is not (deleted, expired, moved, superseded); markFlags,
// markVersion and markAtime say which optional fields the header has, so a
// gone item still parses. markFetched is memcached's "fetched" bit: set by
// the first read (Get, GetItem, touch), in the byte the read decoded
// anyway. markAtime items (Config.AccessTimes) carry their last access
// time, a write or a read, on the partition's clock. markStale and markWon
// are memcached's stale item and win token (Invalidate, SetRecache).
//
// An item's version (memcached's cas unique) is its log offset plus one
// unless it carries one: every write appends at a new, ever-increasing
// offset, so a version changes with every write and never repeats, at no
// cost in bytes. An item moved without being written (ApproxLRU, store-mode
// cleaning, touch) carries the version it had, and its fetched bit and
// access time.
const (
	markGone    = 0
	markLive    = 1
	markFlags   = 2
	markVersion = 4
	markAtime   = 8 // header(): (r[0]&markAtime)>>1 is the field's 4 bytes
	markFetched = 16
	markStale   = 32               // memcached's stale item (md I): see Invalidate
	markWon     = 64               // memcached's win token sent for the item
	markGoneOf  = ^uint8(markLive) // r[0] &= markGoneOf marks an item gone
	// markCarried are the bits a move keeps beside the fields' own.
	markCarried = markAtime | markFetched | markStale | markWon
)

// meta is an item's optional header fields and carried mark bits.
type meta struct {
	flags   uint32
	version uint64 // 0: the item's offset + 1
	atime   uint32 // with markAtime in marks
	marks   uint8  // markCarried bits
}

// extLen is how many bytes the optional fields take.
func (m meta) extLen() int {
	n := 0
	if m.flags != 0 {
		n += 4
	}
	if m.version != 0 {
		n += 8
	}
	if m.marks&markAtime != 0 {
		n += 4
	}
	return n
}

// prefetchAhead is how far ahead of the log head appendItem prefetches.
const prefetchAhead = 512

// itemSize is the log footprint of an item.
func itemSize(klen, vlen int, ttl bool, m meta) uint64 {
	n := uint64(2+klen+vlen+m.extLen()) + uvarintLen(uint64(vlen)<<1)
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

// header decodes the header at the start of r: its length (the key starts
// there), the key and value lengths and whether the item has a TTL (its
// expiry is then the 4 bytes before the key). The log's overhang keeps
// every item, and so r, long enough.
func header(r []byte) (h, klen, vlen int, ttl bool) {
	x, h := uint32(r[2]), 3
	if x >= 0x80 {
		x, h = decodeLong(r)
	}
	if x&1 != 0 {
		h += 4
	}
	h += int(r[0]&markFlags)<<1 + int(r[0]&markVersion)<<1 + int(r[0]&markAtime)>>1
	return h, int(r[1]), int(x >> 1), x&1 != 0
}

// metaOf reads the optional fields and carried bits of the item at off,
// whose header header(r) decoded as h and ttl.
func metaOf(r []byte, h int, ttl bool, off uint64) (m meta) {
	if ttl {
		h -= 4
	}
	m.marks = r[0] & markCarried
	if m.marks&markAtime != 0 {
		h -= 4
		m.atime = binary.LittleEndian.Uint32(r[h:])
	}
	m.version = off + 1
	if r[0]&markVersion != 0 {
		h -= 8
		m.version = binary.LittleEndian.Uint64(r[h:])
	}
	if r[0]&markFlags != 0 {
		m.flags = binary.LittleEndian.Uint32(r[h-4:])
	}
	return m
}

// putVersion rewrites the version of an item that carries one
// (markVersion), whose header header(r) decoded as h and ttl.
func putVersion(r []byte, h int, ttl bool, version uint64) {
	if ttl {
		h -= 4
	}
	h -= int(r[0]&markAtime) >> 1
	binary.LittleEndian.PutUint64(r[h-8:], version)
}

// access marks the item r, whose header decoded as h and ttl, read now:
// fetched and, if it keeps one, accessed now. It writes only what changed,
// so reading a hot item does not dirty its line on every read.
func (p *Partition) access(r []byte, h int, ttl bool) {
	if r[0]&markFetched == 0 {
		r[0] |= markFetched
	}
	if r[0]&markAtime != 0 {
		if ttl {
			h -= 4
		}
		if now := p.now(); binary.LittleEndian.Uint32(r[h-4:]) != now {
			binary.LittleEndian.PutUint32(r[h-4:], now)
		}
	}
}

// fresh is the meta of an item written now with flags: a new item, not
// yet fetched, accessed now if the partition keeps access times.
func (p *Partition) fresh(flags uint32) meta {
	if !p.atimes {
		return meta{flags: flags}
	}
	return meta{flags: flags, marks: markAtime, atime: p.now()}
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

// putExpiry rewrites the expiry of an item with a TTL and header length h.
func putExpiry(r []byte, h int, exp uint32) { binary.LittleEndian.PutUint32(r[h-4:], exp) }

// expiryOf reads the expiry of an item with a TTL and header length h.
func expiryOf(r []byte, h int) uint32 { return binary.LittleEndian.Uint32(r[h-4:]) }

// phys maps an offset in the window (head <= off <= tail) to its position
// in the arena.
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
	h, klen, vlen, _ := header(r)
	r[0] &= markGoneOf
	p.st.Items--
	p.st.Bytes -= uint64(h + klen + vlen)
}

// appendItem makes room for and writes a live item at the tail, counts it
// and returns its offset. In cache mode making room overwrites the oldest
// items; in store mode it cleans the head, which the caller has made sure
// can succeed (see put).
func (p *Partition) appendItem(key, val []byte, ttl bool, exp uint32, m meta) uint64 {
	size := itemSize(len(key), len(val), ttl, m)
	if p.mode == ModeCache {
		for p.tail+size-p.head > p.limit {
			p.evictHead()
		}
		// The head moves through the arena sequentially, with the tail
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
	return p.writeAt(key, val, ttl, exp, m)
}

// writeAt writes a live item at the tail, where the caller made room, and
// counts it.
func (p *Partition) writeAt(key, val []byte, ttl bool, exp uint32, m meta) uint64 {
	size := itemSize(len(key), len(val), ttl, m)
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
	if m.flags != 0 {
		r[0] |= markFlags
		binary.LittleEndian.PutUint32(r[h:], m.flags)
		h += 4
	}
	if m.version != 0 {
		r[0] |= markVersion
		binary.LittleEndian.PutUint64(r[h:], m.version)
		h += 8
	}
	r[0] |= m.marks & markCarried
	if m.marks&markAtime != 0 {
		binary.LittleEndian.PutUint32(r[h:], m.atime)
		h += 4
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
	p.lastOff = off
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

// evictHead (cache mode) drops the oldest item. Its slot, if it still has
// one, is now dead: the slot's offset is before the head.
func (p *Partition) evictHead() {
	r := p.log[p.headPhys:]
	h, klen, vlen, ttl := header(r)
	size := uint64(h + klen + vlen)
	if r[0]&markLive != 0 {
		p.st.Items--
		p.st.Bytes -= size
		if ttl && p.now() >= expiryOf(r, h) {
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
	h, klen, vlen, ttl := header(r)
	size := uint64(h + klen + vlen)
	if r[0]&markLive != 0 {
		key := r[h : h+klen]
		hash := p.hashFn(key)
		wi := p.slotOf(hash, p.head)
		switch {
		case wi < 0:
			// No slot points here: only possible if a caller passed a hash
			// other than Hash(key). The item is unreachable; drop it.
			p.st.Items--
			p.st.Bytes -= size
		case ttl && p.now() >= expiryOf(r, h):
			// Clear the slot but do not compact: the Put that is making
			// room holds a slot position in some chain.
			p.idx[wi] = 0
			p.st.Items--
			p.st.Bytes -= size
			p.st.Expired++
		case r[0]&markVersion == 0:
			// The move would change the version (its offset): write it
			// out, which takes 8 bytes more (maxRecord has room).
			m := metaOf(r, h, ttl, p.head)
			var exp uint32
			if ttl {
				exp = expiryOf(r, h)
			}
			p.st.Items--
			p.st.Bytes -= size
			// The source may not be overwritten by the copy: cleaning
			// keeps a maximum item free past the tail, and the head item
			// is not there.
			off := p.writeAt(r[h:h+klen], r[h+klen:h+klen+vlen], ttl, exp, m)
			p.idx[wi] = tagOf(hash)<<tagShift | off&offMask
		default:
			off := p.tail
			copy(p.log[p.tailPhys:p.tailPhys+size], r[:size])
			p.advanceTail(size)
			p.idx[wi] = tagOf(hash)<<tagShift | off&offMask
		}
	}
	p.advanceHead(size)
}

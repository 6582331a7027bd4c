package kv

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// Partition is one EREW shard: an index and a log in one off-heap region.
// It is NOT safe for concurrent use: exactly one goroutine owns it and
// makes every call, Stats included. It must not be used after the Store
// is closed.
type Partition struct {
	// Hot fields first.
	idx      []uint64 // buckets*8 words
	main     uint64   // number of main buckets
	log      []byte   // cap + overhang bytes
	cap      uint64   // log capacity
	limit    uint64   // log bytes items may take, at most cap (SetLimit)
	head     uint64   // oldest intact byte (64-bit, never wraps)
	tail     uint64   // next byte to write
	headPhys uint64   // head % cap
	tailPhys uint64   // tail % cap
	mode     Mode
	lru      bool
	atimes   bool // Config.AccessTimes: items carry their last access time
	maxValue int
	now      func() uint32
	hashFn   func([]byte) uint64 // Hash; tests swap in a weak hash

	lruWindow   uint64 // ApproxLRU: re-append hits within this of the head
	storeLimit  uint64 // store mode: most live bytes a Put may leave
	maxRecord   uint64
	spareNext   uint64 // next never-used spare bucket
	spareFree   uint64 // free list of returned spare buckets, 0 = empty
	sweepNext   uint64 // tail at which to compact the next chain
	sweepStride uint64
	sweepCursor uint64
	lastOff     uint64 // offset of the item written last (its Version - 1)
	flushAt     uint32 // a delayed Flush's time on the clock, 0 = none
	scratch     []byte // Append, Prepend and Touch build values here

	// Items that lost their slot in cache mode but are still marked live
	// and counted, settled pendingLen Puts later (see unslot and settle).
	pending  [pendingLen]pendingItem
	npending int
	ppending int // oldest entry

	st Stats
}

// pendingLen is how many Puts an unslotted item waits for its prefetch.
const pendingLen = 16

// pendingItem is an item whose slot was taken: by the item at by, which
// superseded it, or by eviction from a full chain (by == noItem).
type pendingItem struct{ off, by uint64 }

const noItem = ^uint64(0)

// Stats are a partition's counters. Read them from the owner goroutine.
type Stats struct {
	Items     uint64 // items stored (including expired ones not yet noticed)
	Bytes     uint64 // log bytes those items take, headers included
	Capacity  uint64 // log capacity in bytes
	Gets      uint64 // Get calls with a valid key
	Hits      uint64 // Gets that found the key (StatusOK or StatusTooLarge)
	Puts      uint64 // Puts that stored an item
	Deletes   uint64 // Deletes that removed an item
	Evictions uint64 // items dropped to make room: overwritten by the log or evicted from a full bucket chain
	Expired   uint64 // items dropped because their TTL had passed
}

func newPartition(cfg Config, g geometry, mem []byte) *Partition {
	idxBytes := g.buckets * bucketBytes
	p := &Partition{
		idx:       unsafeWords(mem[:idxBytes]),
		main:      g.main,
		log:       mem[idxBytes : idxBytes+g.logCap+g.overhang],
		cap:       g.logCap,
		limit:     g.logCap,
		mode:      cfg.Mode,
		lru:       cfg.ApproxLRU && cfg.Mode == ModeCache,
		atimes:    cfg.AccessTimes,
		maxValue:  cfg.MaxValue,
		now:       cfg.Now,
		hashFn:    Hash,
		lruWindow: g.logCap / 8,
		maxRecord: g.maxRecord,
		spareNext: g.main,
	}
	// Store mode keeps one maximum item free for cleaning, plus 1/16 of
	// the log so that cleaning moves at most ~15 bytes per byte freed.
	p.storeLimit = g.logCap - g.maxRecord - g.logCap/16
	// Sweep the whole index once per 16 log rotations, or per 2^46 bytes
	// for huge logs: either way a dead slot is cleared long before its
	// 48-bit offset could alias (2^48 bytes).
	p.sweepStride = max(min(16*g.logCap, 1<<46)/g.main, 1)
	p.sweepNext = p.sweepStride
	p.st.Capacity = g.logCap
	return p
}

// validKey reports whether 1 <= len(key) <= MaxKeyLen.
func validKey(key []byte) bool { return uint(len(key)-1) < MaxKeyLen }

// equalKey reports whether a and b are equal, eight bytes at a time.
func equalKey(a, b []byte) bool {
	n := len(a)
	if n < 8 || len(b) != n {
		return string(a) == string(b)
	}
	for i := 0; i < n-8; i += 8 {
		if binary.LittleEndian.Uint64(a[i:]) != binary.LittleEndian.Uint64(b[i:]) {
			return false
		}
	}
	return binary.LittleEndian.Uint64(a[n-8:]) == binary.LittleEndian.Uint64(b[n-8:])
}

// findIn returns the word index of key's live slot in chain b and the
// item's offset, or wi < 0.
func (p *Partition) findIn(b, tag uint64, key []byte) (wi int, off uint64) {
	for {
		bk := p.bucket(b)
		for i := 1; i < bucketWords; i++ {
			s := bk[i]
			if s>>tagShift != tag {
				continue
			}
			off := p.fullOff(s)
			if off < p.head {
				continue // dead: overwritten by the log
			}
			r := p.at(off)
			if h, klen, _, _ := header(r); klen == len(key) && equalKey(r[h:h+klen], key) {
				return int(b*bucketWords) + i, off
			}
		}
		if b = nextOf(bk); b == 0 {
			return -1, 0
		}
	}
}

// find is findIn over key's chain.
func (p *Partition) find(hash uint64, key []byte) (wi int, off uint64) {
	return p.findIn(p.bucketOf(hash), tagOf(hash), key)
}

// remove deletes a found item: clears its slot, marks it gone and
// compacts its chain.
func (p *Partition) remove(hash uint64, wi int, off uint64) {
	p.idx[wi] = 0
	p.dropItem(off)
	p.compact(p.bucketOf(hash))
}

// Get copies key's value into dst. On a hit with len(dst) >= the value's
// length it returns (length, StatusOK); when the value is longer than dst
// it copies nothing and returns (length, StatusTooLarge), so the caller can
// size a buffer. A miss is (0, StatusNotFound), an empty or over-long key
// (0, StatusBadKey). hash must be Hash(key). It does not allocate.
func (p *Partition) Get(hash uint64, key, dst []byte) (n int, st Status) {
	if uint(len(key)-1) >= MaxKeyLen {
		return 0, StatusBadKey
	}
	if p.flushAt != 0 {
		p.flushDue()
	}
	p.st.Gets++
	// find, written out: this is the hottest loop.
	tag := tagOf(hash)
	tail, window, tphys := p.tail, p.tail-p.head, p.tailPhys
	b := p.bucketOf(hash)
	for {
		bk := p.bucket(b)
		for i := 1; i < bucketWords; i++ {
			s := bk[i]
			if s>>tagShift != tag {
				continue
			}
			age := (tail - s) & offMask
			if age > window {
				continue // dead: overwritten by the log
			}
			ph := tphys - age
			if age > tphys {
				ph += p.cap
			}
			r := p.log[ph:]
			h, klen, vlen, ttl := header(r)
			if klen != len(key) || !equalKey(r[h:h+klen], key) {
				continue
			}
			var exp uint32
			if ttl {
				exp = expiryOf(r, h)
				if p.now() >= exp {
					p.st.Expired++
					p.remove(hash, int(b*bucketWords)+i, tail-age)
					return 0, StatusNotFound
				}
			}
			p.st.Hits++
			if vlen > len(dst) {
				return vlen, StatusTooLarge
			}
			v := h + klen
			copy(dst, r[v:v+vlen])
			p.access(r, h, ttl)
			if p.lru && window-age < p.lruWindow {
				p.reappend(hash, int(b*bucketWords)+i, tail-age, key, dst[:vlen], ttl, exp, metaOf(r, h, ttl, tail-age))
			}
			return vlen, StatusOK
		}
		if b = nextOf(bk); b == 0 {
			return 0, StatusNotFound
		}
	}
}

// reappend (ApproxLRU) moves a hit item near the head to the tail. It
// writes from the caller's key and the value just copied to dst, never
// from the log, so the source cannot be overwritten while it is copied.
func (p *Partition) reappend(hash uint64, wi int, off uint64, key, val []byte, ttl bool, exp uint32, m meta) {
	p.dropItem(off)
	noff := p.appendItem(key, val, ttl, exp, m)
	p.idx[wi] = tagOf(hash)<<tagShift | noff&offMask
	if p.tail >= p.sweepNext {
		p.sweep()
	}
}

// Put stores value under key, replacing any previous value. ttlSeconds 0
// means no expiry; otherwise the item expires ttlSeconds from now on the
// partition's clock (always relative: a protocol layer converts memcached's
// absolute exptimes, see Store.Now). It returns StatusBadKey for an empty
// or over-long key, StatusTooLarge for a value over Config.MaxValue and, in
// store mode, StatusNoMemory when the partition is full (the previous
// value, if any, is then kept). hash must be Hash(key). It does not
// allocate.
func (p *Partition) Put(hash uint64, key, value []byte, ttlSeconds uint32) Status {
	if uint(len(key)-1) >= MaxKeyLen {
		return StatusBadKey
	}
	if len(value) > p.maxValue {
		return StatusTooLarge
	}
	if p.flushAt != 0 {
		p.flushDue()
	}
	if p.npending == pendingLen {
		p.settle() // before the scan: settling may change chains
	}
	ttl, exp := p.expiry(ttlSeconds)
	m := p.fresh(0)
	b := p.bucketOf(hash)
	bk := p.bucket(b)
	if p.mode != ModeCache || nextOf(bk) != 0 {
		return p.put(hash, key, value, ttl, exp, m)
	}

	// The common case, written out: cache mode, a chain of one bucket, and
	// either one live slot with key's tag (taken as key's, see put) or none
	// and a free slot.
	tag := tagOf(hash)
	tail, window := p.tail, p.tail-p.head
	cand, free, matches := 0, 0, 0
	var candAge uint64
	for i := 1; i < bucketWords; i++ {
		s := bk[i]
		age := (tail - s) & offMask
		if s == 0 || age > window {
			if free == 0 {
				free = i
			}
			continue
		}
		if s>>tagShift == tag {
			cand, candAge = i, age
			matches++
		}
	}
	wi := int(b * bucketWords)
	switch {
	case matches == 1:
		wi += cand
		p.unslot(tail-candAge, tail)
	case matches == 0 && free != 0:
		wi += free
	default:
		return p.put(hash, key, value, ttl, exp, m)
	}
	off := p.appendItem(key, value, ttl, exp, m)
	p.idx[wi] = tag<<tagShift | off&offMask
	p.st.Puts++
	if p.tail >= p.sweepNext {
		p.sweep()
	}
	return StatusOK
}

// expiry turns a TTL in seconds into an expiry time on the clock.
func (p *Partition) expiry(ttlSeconds uint32) (bool, uint32) {
	if ttlSeconds == 0 {
		return false, 0
	}
	now := p.now()
	exp := now + ttlSeconds
	if exp < now {
		exp = math.MaxUint32
	}
	return true, exp
}

// put is Put's general case: store mode, overflow chains, several live
// slots with key's tag, or a full bucket.
func (p *Partition) put(hash uint64, key, value []byte, ttl bool, exp uint32, m meta) Status {
	tag := tagOf(hash)

	// One pass over the chain: the live slots with key's tag (the first
	// one and how many), the first free (empty or dead) slot, the oldest
	// live slot as eviction victim, and the chain's last bucket.
	cand, matches, free, victim := -1, 0, -1, -1
	var candOff, victimOff uint64
	b := p.bucketOf(hash)
	last := b
	window := p.tail - p.head
	for {
		bk := p.bucket(b)
		for i := 1; i < bucketWords; i++ {
			s := bk[i]
			wi := int(b*bucketWords) + i
			age := (p.tail - s) & offMask
			if s == 0 || age > window {
				if free < 0 {
					free = wi
				}
				continue
			}
			off := p.tail - age
			if s>>tagShift == tag {
				if matches == 0 {
					cand, candOff = wi, off
				}
				matches++
			}
			if victim < 0 || off < victimOff {
				victim, victimOff = wi, off
			}
		}
		last = b
		if b = nextOf(bk); b == 0 {
			break
		}
	}

	// Which slot is key's? In cache mode the only live slot with key's tag
	// is taken as key's without reading its item, which would cost a cache
	// miss: key cannot be elsewhere in the chain (its slot would have the
	// tag too), so no duplicate can arise, and if the slot was another
	// key's, settle finds out and gives that key a slot again. Otherwise
	// the keys are compared.
	found := -1
	verified := false
	if matches == 1 && p.mode == ModeCache {
		found = cand
	} else if matches > 0 {
		found, candOff = p.findIn(p.bucketOf(hash), tag, key)
		verified = true
	}

	target := found
	needSpare := false
	if found < 0 {
		switch {
		case free >= 0:
			target = free
		case p.hasSpare():
			needSpare = true
		case p.mode == ModeStore:
			return StatusNoMemory
		default:
			target = victim
		}
	}
	if p.mode == ModeStore {
		live := p.st.Bytes + itemSize(len(key), len(value), ttl, m)
		if found >= 0 {
			h, klen, vlen, _ := header(p.at(candOff))
			live -= uint64(h + klen + vlen)
		}
		if live > p.storeLimit {
			return StatusNoMemory
		}
	}

	// Commit.
	switch {
	case found >= 0 && verified:
		p.dropItem(candOff)
	case found >= 0:
		p.unslot(candOff, p.tail) // cache mode: appendItem writes at the tail
	case needSpare:
		nb := p.allocSpare()
		p.bucket(last)[0] |= nb
		target = int(nb*bucketWords) + 1
	case target == victim:
		p.unslot(victimOff, noItem)
	}
	off := p.appendItem(key, value, ttl, exp, m)
	p.idx[target] = tag<<tagShift | off&offMask
	p.st.Puts++
	if p.mode == ModeCache && p.tail >= p.sweepNext {
		p.sweep()
	}
	return StatusOK
}

// Delete removes key. It returns StatusNotFound when the key is absent or
// already expired, StatusBadKey for an empty or over-long key. hash must be
// Hash(key).
func (p *Partition) Delete(hash uint64, key []byte) Status {
	if !validKey(key) {
		return StatusBadKey
	}
	if p.flushAt != 0 {
		p.flushDue()
	}
	// A pending item may be about to get its slot back (see settle):
	// settle first, so that a deleted key cannot come back.
	p.settleAll()
	wi, off := p.find(hash, key)
	if wi < 0 {
		return StatusNotFound
	}
	r := p.at(off)
	h, _, _, ttl := header(r)
	expired := ttl && p.now() >= expiryOf(r, h)
	p.remove(hash, wi, off)
	if expired {
		p.st.Expired++
		return StatusNotFound
	}
	p.st.Deletes++
	return StatusOK
}

// Now is the partition's clock (Config.Now), which its TTLs and access
// times are on.
func (p *Partition) Now() uint32 { return p.now() }

// Stats returns the partition's counters. Owner goroutine only.
func (p *Partition) Stats() Stats {
	p.settleAll()
	return p.st
}

// unslot records that the live item at off lost its slot, to the item
// about to be written at by or to eviction (by == noItem). Marking it gone
// now would cost a cache miss on a random line, so it is prefetched and
// settled pendingLen Puts later, when the line has arrived. Put keeps an
// entry free: it settles one first when the ring is full.
func (p *Partition) unslot(off, by uint64) {
	prefetch(uintptr(unsafe.Pointer(&p.log[p.phys(off)])))
	i := p.ppending + p.npending
	if i >= pendingLen {
		i -= pendingLen
	}
	p.pending[i] = pendingItem{off, by}
	p.npending++
}

// settle settles the oldest pending item: marks it gone and takes it out
// of the counts. If the head has passed it, the head has counted it
// already (as an eviction). If it was superseded, its key is compared
// with its successor's: Put takes a chain's only slot with the key's tag
// without reading the item, so now and then (about once in 65536/load
// Puts of a new key) the slot was another key's. That key then gets a
// slot again, unless it has been put again meanwhile or its chain is full
// (then it counts as evicted); until then, Get misses it.
func (p *Partition) settle() {
	e := p.pending[p.ppending]
	p.ppending++
	if p.ppending == pendingLen {
		p.ppending = 0
	}
	p.npending--
	if e.off < p.head {
		return
	}
	r := p.at(e.off)
	h, klen, vlen, _ := header(r)
	if e.by == noItem {
		p.st.Evictions++
	} else {
		nr := p.at(e.by)
		nh, nklen, _, _ := header(nr)
		key := r[h : h+klen]
		if nklen != klen || !equalKey(nr[nh:nh+klen], key) {
			switch p.reslot(e.off, key) {
			case reslotted:
				return
			case reslotFull:
				p.st.Evictions++
			}
		}
	}
	r[0] &= markGoneOf
	p.st.Items--
	p.st.Bytes -= uint64(h + klen + vlen)
}

// Outcomes of reslot.
const (
	reslotted  = iota // the item has a slot again
	reslotNew         // the key has been put again meanwhile
	reslotFull        // no free slot in the chain and no spare bucket
)

// reslot gives the live item at off, which lost its slot to another key,
// a slot again, unless its key has a live slot already or its chain has no
// free slot and no spare bucket is left.
func (p *Partition) reslot(off uint64, key []byte) int {
	hash := p.hashFn(key)
	b := p.bucketOf(hash)
	if wi, _ := p.findIn(b, tagOf(hash), key); wi >= 0 {
		return reslotNew
	}
	slot := tagOf(hash)<<tagShift | off&offMask
	window := p.tail - p.head
	for {
		bk := p.bucket(b)
		for i := 1; i < bucketWords; i++ {
			if s := bk[i]; s == 0 || (p.tail-s)&offMask > window {
				bk[i] = slot
				return reslotted
			}
		}
		if nextOf(bk) == 0 {
			nb := p.allocSpare()
			if nb == 0 {
				return reslotFull
			}
			bk[0] |= nb
			p.bucket(nb)[1] = slot
			return reslotted
		}
		b = nextOf(bk)
	}
}

func (p *Partition) settleAll() {
	for p.npending > 0 {
		p.settle()
	}
}

// Prefetch hints that key, of this hash, is about to be looked up: it
// starts loading the key's index bucket into the CPU cache and returns at
// once. A server with several requests at hand can prefetch them all
// first, so that their cache misses overlap instead of queueing; see also
// PrefetchItem. It changes nothing and is never required.
func (p *Partition) Prefetch(hash uint64) {
	prefetch(uintptr(unsafe.Pointer(&p.idx[p.bucketOf(hash)*bucketWords])))
}

// PrefetchItem is the second step after Prefetch: it reads the key's
// bucket (best done once Prefetch has brought it in) and starts loading
// the items whose slots carry the key's tag. It changes nothing.
func (p *Partition) PrefetchItem(hash uint64) {
	tag := tagOf(hash)
	bk := p.bucket(p.bucketOf(hash))
	tail, window, tphys := p.tail, p.tail-p.head, p.tailPhys
	for i := 1; i < bucketWords; i++ {
		s := bk[i]
		if s>>tagShift != tag {
			continue
		}
		if age := (tail - s) & offMask; age <= window {
			d := tphys - age
			prefetch(uintptr(unsafe.Pointer(&p.log[d+p.cap&uint64(int64(d)>>63)])))
		}
	}
}

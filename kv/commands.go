package kv

import (
	"math"
	"strconv"
	"unsafe"
)

// The memcached commands beyond Get, Put and Delete. Each is a single-key
// operation run by the key's one owner goroutine, so each is exact without
// locks: a compare-and-swap cannot race another writer, an increment
// cannot lose an update.

// Meta is what a partition keeps of an item beside its key and value.
type Meta struct {
	// Version changes with every write of the item and never repeats
	// within a partition (memcached's cas unique), unless a client chose
	// it (SetVersion); never 0.
	Version uint64
	// Flags are the client's 32 opaque bits (memcached's client flags).
	Flags uint32
	// Expires is when the item expires on the store's clock (Now), 0 if
	// never: memcached's meta commands report the TTL left.
	Expires uint32
	// Accessed is when the item was last written or read, before the
	// command that returns it, on the store's clock, if Timed: memcached's
	// last access (mg's l, me's la).
	Accessed uint32
	// Timed: the item keeps its access time (Config.AccessTimes).
	Timed bool
	// Fetched: the item had been read (Get, GetItem, GetAndTouch, Touch)
	// before the command that returns it: memcached's "hit before" (mg's h,
	// me's fetch). A write starts a new item, not fetched.
	Fetched bool
	// Stale: the item was invalidated (Invalidate), memcached's stale
	// item, until written again.
	Stale bool
	// Won: a client was handed the item's win token (SetRecache; memcached
	// meta get's W, which later readers see as Z), until written again or
	// invalidated.
	Won bool
}

// public is the Meta of an item with these fields and expiry exp.
func (m meta) public(exp uint32) Meta {
	return Meta{Version: m.version, Flags: m.flags, Expires: exp, Accessed: m.atime,
		Timed: m.marks&markAtime != 0, Fetched: m.marks&markFetched != 0,
		Stale: m.marks&markStale != 0, Won: m.marks&markWon != 0}
}

// StoreMode is Store's condition.
type StoreMode uint8

const (
	// StoreSet stores whether or not the key exists.
	StoreSet StoreMode = iota
	// StoreAdd stores only if the key does not exist.
	StoreAdd
	// StoreReplace stores only if the key exists.
	StoreReplace
	// StoreAppend appends to an existing value (keeping its flags and
	// expiry).
	StoreAppend
	// StorePrepend prepends to an existing value (keeping its flags and
	// expiry).
	StorePrepend
)

// MaxDecimal is the longest value Incr and Decr take: 2^64-1 in decimal.
const MaxDecimal = 20

// hit is a live, unexpired item lookup found.
type hit struct {
	wi        int
	off       uint64
	r         []byte // the log from the item on
	h, klen   int
	vlen      int
	ttl       bool
	exp       uint32
	m         meta
	valueFrom int // r[valueFrom:valueFrom+vlen] is the value
}

// lookup finds key's live item, dropping it (and counting it expired) if
// its TTL has passed.
func (p *Partition) lookup(hash uint64, key []byte) (hit, bool) {
	wi, off := p.find(hash, key)
	if wi < 0 {
		return hit{}, false
	}
	r := p.at(off)
	h, klen, vlen, ttl := header(r)
	var exp uint32
	if ttl {
		exp = expiryOf(r, h)
		if p.now() >= exp {
			p.st.Expired++
			p.remove(hash, wi, off)
			return hit{}, false
		}
	}
	return hit{wi: wi, off: off, r: r, h: h, klen: klen, vlen: vlen, ttl: ttl, exp: exp,
		m: metaOf(r, h, ttl, off), valueFrom: h + klen}, true
}

func (x *hit) value() []byte { return x.r[x.valueFrom : x.valueFrom+x.vlen] }

// meta is the item's Meta as lookup found it (before the command's own
// access).
func (x *hit) meta() Meta { return x.m.public(x.exp) }

// begin is every command's preamble: key check, a due flush, and the
// pending items settled (a command reads the item it replaces, and
// settling first keeps a superseded key from coming back).
func (p *Partition) begin(key []byte) Status {
	if !validKey(key) {
		return StatusBadKey
	}
	if p.flushAt != 0 {
		p.flushDue()
	}
	p.settleAll()
	return StatusOK
}

// GetItem is Get that also returns the item's Meta (memcached's gets), as
// it was before this read. It does not allocate.
func (p *Partition) GetItem(hash uint64, key, dst []byte) (int, Meta, Status) {
	return p.getItem(hash, key, dst, true)
}

// PeekItem is GetItem that leaves the item as it was: neither fetched nor
// accessed (memcached's mg with u, me).
func (p *Partition) PeekItem(hash uint64, key, dst []byte) (int, Meta, Status) {
	return p.getItem(hash, key, dst, false)
}

func (p *Partition) getItem(hash uint64, key, dst []byte, access bool) (int, Meta, Status) {
	if st := p.begin(key); st != StatusOK {
		return 0, Meta{}, st
	}
	p.st.Gets++
	x, ok := p.lookup(hash, key)
	if !ok {
		return 0, Meta{}, StatusNotFound
	}
	p.st.Hits++
	m := x.meta()
	if x.vlen > len(dst) {
		return x.vlen, m, StatusTooLarge
	}
	if access {
		p.access(x.r, x.h, x.ttl)
	}
	return copy(dst, x.value()), m, StatusOK
}

// Store writes value under key if mode's condition holds and, when cas is
// not 0, only over the item of that Version (StatusExists if it has
// another, StatusNotFound if there is none). A failed condition is
// StatusNotStored. Set, Add and Replace give the item flags and
// ttlSeconds (0: no expiry); Append and Prepend keep the item's. It
// returns the new Version. It does not allocate (Append and Prepend use a
// buffer the partition allocates once).
func (p *Partition) Store(hash uint64, key, value []byte, ttlSeconds uint32, flags uint32, mode StoreMode, cas uint64) (uint64, Status) {
	if st := p.begin(key); st != StatusOK {
		return 0, st
	}
	if len(value) > p.maxValue {
		return 0, StatusTooLarge
	}
	x, found := p.lookup(hash, key)
	switch {
	case cas != 0 && !found:
		return 0, StatusNotFound
	case cas != 0 && x.m.version != cas:
		return 0, StatusExists
	case mode == StoreAdd && found:
		return 0, StatusNotStored
	case mode != StoreSet && mode != StoreAdd && !found:
		return 0, StatusNotStored
	}
	ttl, exp := p.expiry(ttlSeconds)
	if mode == StoreAppend || mode == StorePrepend {
		n := x.vlen + len(value)
		if n > p.maxValue {
			return 0, StatusTooLarge
		}
		buf := p.scratchOf(n)
		if mode == StoreAppend {
			copy(buf[copy(buf, x.value()):], value)
		} else {
			copy(buf[copy(buf, value):], x.value())
		}
		value, flags, ttl, exp = buf, x.m.flags, x.ttl, x.exp
	}
	if st := p.put(hash, key, value, ttl, exp, p.fresh(flags)); st != StatusOK {
		return 0, st
	}
	return p.lastOff + 1, StatusOK
}

// Incr adds delta to key's value, a decimal unsigned 64-bit number,
// wrapping at 2^64 as memcached does; with decr it subtracts, stopping at 0.
// The item keeps its flags and expiry. A missing key is StatusNotFound,
// unless create: then initial is stored with flags and ttlSeconds (the
// binary protocol's initial value). A value that is not a number of at
// most MaxDecimal digits (trailing spaces allowed) is StatusNotNumeric. It
// returns the new number and Version. It does not allocate.
func (p *Partition) Incr(hash uint64, key []byte, delta uint64, decr bool, create bool, initial uint64, ttlSeconds, flags uint32) (uint64, uint64, Status) {
	if st := p.begin(key); st != StatusOK {
		return 0, 0, st
	}
	x, found := p.lookup(hash, key)
	var n uint64
	var ttl bool
	var exp uint32
	switch {
	case !found && !create:
		return 0, 0, StatusNotFound
	case !found:
		n = initial
		ttl, exp = p.expiry(ttlSeconds)
	default:
		v, ok := parseDecimal(x.value())
		if !ok {
			return 0, 0, StatusNotNumeric
		}
		switch {
		case !decr:
			n = v + delta
		case delta > v:
			n = 0
		default:
			n = v - delta
		}
		flags, ttl, exp = x.m.flags, x.ttl, x.exp
	}
	var digits [MaxDecimal]byte
	if st := p.put(hash, key, strconv.AppendUint(digits[:0], n, 10), ttl, exp, p.fresh(flags)); st != StatusOK {
		return 0, 0, st
	}
	return n, p.lastOff + 1, StatusOK
}

// parseDecimal parses an unsigned decimal of 1..MaxDecimal digits,
// followed by nothing but spaces (memcached pads a shrunken number so).
func parseDecimal(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > MaxDecimal {
		return 0, false
	}
	var v uint64
	i := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		d := uint64(b[i] - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if i == 0 {
		return 0, false
	}
	for ; i < len(b); i++ {
		if b[i] != ' ' {
			return 0, false
		}
	}
	return v, true
}

// Touch gives key's item a new TTL (0: no expiry), keeping its value,
// flags and Version. A missing or expired key is StatusNotFound. It does
// not allocate (beyond the buffer Store's Append allocates once).
func (p *Partition) Touch(hash uint64, key []byte, ttlSeconds uint32) (Meta, Status) {
	_, m, st := p.touch(hash, key, ttlSeconds, nil, false, true)
	return m, st
}

// Retime is Touch that leaves the item's access history as it was: not
// a read (memcached's meta commands' T with u, and ma's T).
func (p *Partition) Retime(hash uint64, key []byte, ttlSeconds uint32) (Meta, Status) {
	_, m, st := p.touch(hash, key, ttlSeconds, nil, false, false)
	return m, st
}

// GetAndTouch is Touch that also copies the value into dst, as GetItem
// does (memcached's gat).
func (p *Partition) GetAndTouch(hash uint64, key, dst []byte, ttlSeconds uint32) (int, Meta, Status) {
	return p.touch(hash, key, ttlSeconds, dst, true, true)
}

func (p *Partition) touch(hash uint64, key []byte, ttlSeconds uint32, dst []byte, get, access bool) (int, Meta, Status) {
	if st := p.begin(key); st != StatusOK {
		return 0, Meta{}, st
	}
	if get {
		p.st.Gets++
	}
	x, ok := p.lookup(hash, key)
	if !ok {
		return 0, Meta{}, StatusNotFound
	}
	if get {
		p.st.Hits++
	}
	m := x.meta()
	if get && x.vlen > len(dst) {
		return x.vlen, m, StatusTooLarge
	}
	n := 0
	if get {
		n = copy(dst, x.value())
	}
	// A touch is an access, as memcached's (a Retime is not).
	if access {
		p.access(x.r, x.h, x.ttl)
	}
	ttl, exp := p.expiry(ttlSeconds)
	if ttl && x.ttl {
		// The item has room for an expiry: rewrite it in place.
		putExpiry(x.r, x.h, exp)
		return n, m, StatusOK
	}
	// Rewrite the item at the tail with or without an expiry; the value
	// goes through the scratch buffer, as making room may overwrite it.
	buf := p.scratchOf(x.vlen)
	copy(buf, x.value())
	if st := p.put(hash, key, buf, ttl, exp, metaOf(x.r, x.h, x.ttl, x.off)); st != StatusOK {
		return 0, Meta{}, st
	}
	return n, m, StatusOK
}

// scratchOf returns n bytes of the partition's scratch buffer, allocated
// once at the largest size (only partitions that append or touch need it).
func (p *Partition) scratchOf(n int) []byte {
	if p.scratch == nil {
		p.scratch = make([]byte, p.maxValue)
	}
	return p.scratch[:n]
}

// Flush drops every item now (delaySeconds 0) or delaySeconds from now on
// the partition's clock (memcached's flush_all with a delay; a later Flush
// replaces a pending one). Items stored before the flush happens are
// dropped with it.
func (p *Partition) Flush(delaySeconds uint32) {
	if delaySeconds == 0 {
		p.flushNow()
		return
	}
	_, p.flushAt = p.expiry(delaySeconds)
}

// flushDue flushes if a delayed Flush's time has come.
func (p *Partition) flushDue() {
	if p.now() >= p.flushAt {
		p.flushNow()
	}
}

// flushNow empties the partition: the head jumps to the tail (the log
// holds nothing) and the index and spare buckets start afresh, so no dead
// slot is left to outlive a sweep. The index's pages go back to the
// kernel (zero), so a flush neither commits nor walks an index never used.
func (p *Partition) flushNow() {
	p.flushAt = 0
	p.npending, p.ppending = 0, 0
	zero(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(p.idx))), len(p.idx)*8))
	p.spareNext, p.spareFree = p.main, 0
	p.advanceHead(p.tail - p.head)
	p.st.Items, p.st.Bytes = 0, 0
}

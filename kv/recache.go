package kv

// Memcached's serve-stale and recache protocol (its meta commands): an
// item can be invalidated instead of deleted, and be served, marked stale,
// while one client, handed the item's win token, recomputes it. Both marks
// live in the item's mark byte; a write of the item clears them.

// Invalidate marks key's item stale instead of deleting it (memcached's
// md with I): a new Version, the win token free again, and, with setTTL,
// a new TTL (0: none); value, flags and access history stay. With cas not
// 0 it acts only on the item of that Version (StatusExists otherwise). A
// missing key is StatusNotFound. It returns the new Version. It does not
// allocate (beyond the buffer Store's Append allocates once).
func (p *Partition) Invalidate(hash uint64, key []byte, cas uint64, setTTL bool, ttlSeconds uint32) (uint64, Status) {
	if st := p.begin(key); st != StatusOK {
		return 0, st
	}
	x, ok := p.lookup(hash, key)
	switch {
	case !ok:
		return 0, StatusNotFound
	case cas != 0 && x.m.version != cas:
		return 0, StatusExists
	}
	ttl, exp := x.ttl, x.exp
	if setTTL {
		ttl, exp = p.expiry(ttlSeconds)
	}
	// A new version is a new offset: the item is written again, its value
	// through the scratch buffer, as making room may overwrite it.
	m := x.m
	m.version = 0
	m.marks = m.marks&^markWon | markStale
	buf := p.scratchOf(x.vlen)
	copy(buf, x.value())
	if st := p.put(hash, key, buf, ttl, exp, m); st != StatusOK {
		return 0, st
	}
	return p.lastOff + 1, StatusOK
}

// SetRecache sets key's item's stale mark and win token (Meta.Stale,
// Meta.Won) in place, without a new Version: memcached's meta get handing
// a client the win token, or a stale set (ms with I) keeping the item
// stale. A missing key is StatusNotFound.
func (p *Partition) SetRecache(hash uint64, key []byte, stale, won bool) Status {
	if st := p.begin(key); st != StatusOK {
		return st
	}
	x, ok := p.lookup(hash, key)
	if !ok {
		return StatusNotFound
	}
	r := x.r[0] &^ (markStale | markWon)
	if stale {
		r |= markStale
	}
	if won {
		r |= markWon
	}
	x.r[0] = r
	return StatusOK
}

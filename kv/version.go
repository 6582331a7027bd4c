package kv

// SetVersion gives key's item the Version version instead of the one its
// last write gave it (memcached's meta E flag: a client versions items by
// its own clock; and md x, whose empty item keeps the old item's cas).
// Value, flags, TTL, access history and stale marks stay. Versions set so
// are the client's: they may repeat, as memcached's do; version 0 gives
// the item a new one, as a write does. A missing key is StatusNotFound. It
// does not allocate (beyond the buffer Store's Append allocates once).
func (p *Partition) SetVersion(hash uint64, key []byte, version uint64) Status {
	if st := p.begin(key); st != StatusOK {
		return st
	}
	x, ok := p.lookup(hash, key)
	if !ok {
		return StatusNotFound
	}
	if version != 0 && x.r[0]&markVersion != 0 {
		// The item carries its version: overwrite it in place.
		putVersion(x.r, x.h, x.ttl, version)
		return StatusOK
	}
	// The item's version is its offset: it is written again with the
	// version field, its value through the scratch buffer, as making room
	// may overwrite it.
	m := x.m
	m.version = version
	buf := p.scratchOf(x.vlen)
	copy(buf, x.value())
	return p.put(hash, key, buf, x.ttl, x.exp, m)
}

package kv

// Scan visits the partition's live, unexpired items in log order (oldest
// first) from position from, calling fn with each one's key (valid only
// during the call), Meta and value length, until fn returns false (that
// item is visited again by the next call) or limit items were looked at.
// It returns the position to go on from, and done once it reached the
// log's end. A position the log has dropped since goes on from its oldest
// item, so a resumed scan visits every item that lived throughout it once
// (memcached's lru_crawler metadump: no order or snapshot promised). It
// does not allocate.
func (p *Partition) Scan(from uint64, limit int, fn func(key []byte, m Meta, vlen int) bool) (next uint64, done bool) {
	if p.flushAt != 0 {
		p.flushDue()
	}
	p.settleAll()
	now := p.now()
	off := max(from, p.head)
	for n := 0; off < p.tail; n++ {
		if n == limit {
			return off, false
		}
		r := p.at(off)
		h, klen, vlen, ttl := header(r)
		if r[0]&markLive != 0 {
			var exp uint32
			if ttl {
				exp = expiryOf(r, h)
			}
			if !ttl || now < exp {
				if !fn(r[h:h+klen], metaOf(r, h, ttl, off).public(exp), vlen) {
					return off, false
				}
			}
		}
		off += uint64(h + klen + vlen)
	}
	return off, true
}

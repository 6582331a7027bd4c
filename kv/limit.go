package kv

// MinLimit is the smallest log limit SetLimit takes for a store of
// maxValue-byte values: four maximum items.
func MinLimit(maxValue int) uint64 { return 4 * (maxHeader + MaxKeyLen + uint64(maxValue)) }

// SetLimit bounds the log bytes the partition's items take (memcached's
// cache_memlimit, per partition), within MinLimit and the log's capacity,
// and returns the limit set; Stats.Capacity reports it. The memory stays
// allocated: in cache mode the next writes evict the oldest items past
// the limit, in store mode writes past it fail with StatusNoMemory until
// deletes make room. Raising it again (up to the capacity) gives the room
// back.
func (p *Partition) SetLimit(bytes uint64) uint64 {
	lim := min(max(bytes, 4*p.maxRecord), p.cap)
	p.limit = lim
	// As at start (New): store mode keeps one maximum item and 1/16 of the
	// log free; ApproxLRU re-appends hits in the oldest eighth.
	p.storeLimit = lim - p.maxRecord - lim/16
	p.lruWindow = lim / 8
	p.st.Capacity = lim
	return lim
}

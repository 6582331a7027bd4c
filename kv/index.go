package kv

// The index is an array of 64-byte buckets of 8 words. Buckets [0, main)
// are where hashes land; the rest are spares, lent to chains that
// overflow. Word 0 holds the number of the chain's next bucket in its low
// 32 bits (0 = end of chain; bucket 0 is a main bucket, so never a link).
// Words 1..7 are slots: tag<<48 | offset&(2^48-1), 0 when empty.
//
// A slot is live when its offset is at or after the log head. Dead slots
// (their item overwritten by the log's wrap) count as empty; the sweep and
// compact clear them.

// bucketOf maps hash bits 0..31 onto [0, main) by multiply-shift.
func (p *Partition) bucketOf(h uint64) uint64 {
	return (h & 0xffffffff) * p.main >> 32
}

// bucket returns bucket b as an array, one bounds check.
func (p *Partition) bucket(b uint64) *[bucketWords]uint64 {
	return (*[bucketWords]uint64)(p.idx[b*bucketWords : b*bucketWords+bucketWords])
}

func nextOf(bk *[bucketWords]uint64) uint64 { return bk[0] & 0xffffffff }

// fullOff rebuilds a slot's 64-bit log offset from its low 48 bits: the
// latest offset not after the tail with those bits.
func (p *Partition) fullOff(s uint64) uint64 {
	t := p.tail
	return t - ((t - s) & offMask)
}

func (p *Partition) hasSpare() bool {
	return p.spareFree != 0 || p.spareNext < uint64(len(p.idx))/bucketWords
}

// allocSpare takes a zeroed spare bucket, or returns 0 when none is left.
func (p *Partition) allocSpare() uint64 {
	if b := p.spareFree; b != 0 {
		bk := p.bucket(b)
		p.spareFree = nextOf(bk)
		bk[0] = 0
		return b
	}
	if p.spareNext < uint64(len(p.idx))/bucketWords {
		b := p.spareNext
		p.spareNext++
		return b
	}
	return 0
}

// releaseSpare returns an empty spare bucket to the pool.
func (p *Partition) releaseSpare(b uint64) {
	bk := p.bucket(b)
	*bk = [bucketWords]uint64{}
	bk[0] = p.spareFree
	p.spareFree = b
}

// slotOf finds the word index of the slot that points at off for a key of
// hash h, or -1.
func (p *Partition) slotOf(h, off uint64) int {
	want := tagOf(h)<<tagShift | off&offMask
	b := p.bucketOf(h)
	for {
		bk := p.bucket(b)
		for i := 1; i < bucketWords; i++ {
			if bk[i] == want {
				return int(b*bucketWords) + i
			}
		}
		if b = nextOf(bk); b == 0 {
			return -1
		}
	}
}

// compact rewrites chain b so its live slots come first, clears dead ones
// and hands emptied overflow buckets back to the spare pool.
func (p *Partition) compact(b uint64) {
	// Most chains are one bucket without dead slots: leave them untouched.
	bk := p.bucket(b)
	if nextOf(bk) == 0 {
		window := p.tail - p.head
		dead := false
		for i := 1; i < bucketWords; i++ {
			s := bk[i]
			dead = dead || s != 0 && (p.tail-s)&offMask > window
		}
		if !dead {
			return
		}
	}
	// The write position never passes the read position, so moving a slot
	// never overwrites one not yet read.
	wb, wi := b, 1
	for rb := b; ; {
		rk := p.bucket(rb)
		for i := 1; i < bucketWords; i++ {
			s := rk[i]
			if s == 0 || p.fullOff(s) < p.head {
				continue
			}
			if wi == bucketWords {
				wb, wi = nextOf(p.bucket(wb)), 1
			}
			if w := wb*bucketWords + uint64(wi); w != rb*bucketWords+uint64(i) {
				p.idx[w] = s
			}
			wi++
		}
		if rb = nextOf(rk); rb == 0 {
			break
		}
	}
	// Clear the rest of the write bucket, then free the buckets after it.
	wk := p.bucket(wb)
	for i := wi; i < bucketWords; i++ {
		wk[i] = 0
	}
	rest := nextOf(wk)
	wk[0] &^= 0xffffffff
	for rest != 0 {
		n := nextOf(p.bucket(rest))
		p.releaseSpare(rest)
		rest = n
	}
}

// sweep compacts chains in order, one per sweepStride bytes appended, so
// that every dead slot is cleared within min(16*logCap, 2^46) bytes of the
// head passing it: far less than the 2^48 bytes after which its 48-bit
// offset could alias a live one.
func (p *Partition) sweep() {
	for p.tail >= p.sweepNext {
		p.compact(p.sweepCursor)
		p.sweepCursor++
		if p.sweepCursor == p.main {
			p.sweepCursor = 0
		}
		p.sweepNext += p.sweepStride
	}
}

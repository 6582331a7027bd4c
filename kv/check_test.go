package kv

import (
	"fmt"
)

// check verifies a partition's invariants: every live slot points at a
// live item with its key's tag, in its key's chain, one slot per key; the
// live items in the log are exactly the ones slots point at; Stats.Items
// counts them and Stats.Bytes their bytes; spare
// buckets are each in exactly one place.
func (p *Partition) check() error {
	p.settleAll()
	if p.tail-p.head > p.cap {
		return fmt.Errorf("window %d > cap %d", p.tail-p.head, p.cap)
	}
	if p.headPhys != p.head%p.cap || p.tailPhys != p.tail%p.cap {
		return fmt.Errorf("phys: head %d/%d tail %d/%d cap %d", p.head, p.headPhys, p.tail, p.tailPhys, p.cap)
	}
	nb := uint64(len(p.idx)) / bucketWords
	owner := make(map[uint64]string, nb)
	slotOffs := map[uint64]bool{}
	keys := map[string]bool{}
	for b := uint64(0); b < p.main; b++ {
		for c := b; ; {
			if c != b {
				if c < p.main || c >= p.spareNext {
					return fmt.Errorf("chain %d links to bucket %d (main %d, spareNext %d)", b, c, p.main, p.spareNext)
				}
				if o, dup := owner[c]; dup {
					return fmt.Errorf("bucket %d in chain %d and %s", c, b, o)
				}
				owner[c] = fmt.Sprintf("chain %d", b)
			}
			bk := p.bucket(c)
			if c == b && bk[0]>>32 != 0 {
				return fmt.Errorf("bucket %d word 0 high bits %x", c, bk[0])
			}
			for i := 1; i < bucketWords; i++ {
				s := bk[i]
				if s == 0 {
					continue
				}
				off := p.fullOff(s)
				if off < p.head {
					if p.mode == ModeStore {
						return fmt.Errorf("dead slot %x at %d/%d in store mode", s, c, i)
					}
					if p.tail-off > p.cap+p.sweepStride*p.main+2*p.maxRecord {
						return fmt.Errorf("dead slot %x at %d/%d outlived the sweep (tail %d)", s, c, i, p.tail)
					}
					continue
				}
				r := p.at(off)
				h, klen, _, _ := header(r)
				if r[0]&markLive == 0 {
					return fmt.Errorf("slot %d/%d points at item at %d marked %d", c, i, off, r[0])
				}
				key := r[h : h+klen]
				kh := p.hashFn(key)
				if tagOf(kh) != s>>tagShift {
					return fmt.Errorf("slot %d/%d tag %x, key %q has %x", c, i, s>>tagShift, key, tagOf(kh))
				}
				if p.bucketOf(kh) != b {
					return fmt.Errorf("key %q in chain %d, belongs in %d", key, b, p.bucketOf(kh))
				}
				if keys[string(key)] {
					return fmt.Errorf("key %q has two live slots", key)
				}
				keys[string(key)] = true
				if slotOffs[off] {
					return fmt.Errorf("two slots point at %d", off)
				}
				slotOffs[off] = true
			}
			c = nextOf(bk)
			if c == 0 {
				break
			}
		}
	}
	for c := p.spareFree; c != 0; c = nextOf(p.bucket(c)) {
		if o, dup := owner[c]; dup {
			return fmt.Errorf("free bucket %d also in %s", c, o)
		}
		owner[c] = "free list"
		for i := 1; i < bucketWords; i++ {
			if p.bucket(c)[i] != 0 {
				return fmt.Errorf("free bucket %d has slot %d set", c, i)
			}
		}
	}
	if uint64(len(owner)) != p.spareNext-p.main {
		return fmt.Errorf("%d spare buckets handed out, %d accounted for", p.spareNext-p.main, len(owner))
	}
	var items, bytes uint64
	for off := p.head; off < p.tail; {
		r := p.at(off)
		h, klen, vlen, _ := header(r)
		size := uint64(h + klen + vlen)
		if klen == 0 || klen > MaxKeyLen || vlen > p.maxValue {
			return fmt.Errorf("garbage item at %d: klen %d vlen %d", off, klen, vlen)
		}
		switch r[0] &^ (markFlags | markVersion | markCarried) {
		case markLive:
			items++
			bytes += size
			if !slotOffs[off] {
				return fmt.Errorf("live item at %d has no slot", off)
			}
			delete(slotOffs, off)
		case markGone:
		default:
			return fmt.Errorf("item at %d has mark %d", off, r[0])
		}
		off += size
		if off > p.tail {
			return fmt.Errorf("item at %d runs past the tail %d", off, p.tail)
		}
	}
	if len(slotOffs) != 0 {
		return fmt.Errorf("%d slots point at no live item", len(slotOffs))
	}
	if items != p.st.Items || bytes != p.st.Bytes {
		return fmt.Errorf("log has %d items/%d bytes, stats say %d/%d", items, bytes, p.st.Items, p.st.Bytes)
	}
	return nil
}

// startAt moves an empty partition's log to a 64-bit offset, to test what
// happens when offsets cross 2^48 and beyond.
func (p *Partition) startAt(off uint64) {
	if p.tail != 0 {
		panic("startAt on a used partition")
	}
	p.head, p.tail = off, off
	p.headPhys, p.tailPhys = off%p.cap, off%p.cap
	p.sweepNext = off + p.sweepStride
}

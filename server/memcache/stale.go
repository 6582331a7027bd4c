package memcache

import "github.com/jakiro-kv/jakiro/kv"

// Memcached's serve-stale and recache flags (protocol.txt, "Meta Get",
// "Meta Delete", "Meta Set"): md with I marks an item stale instead of
// deleting it; an mg of a stale item answers X and hands the first reader
// the win token (W), later readers Z, until the item is written again;
// mg's N creates an empty item on a miss and wins it, R wins an item whose
// TTL left is under its token; ms with I and a C older than the item's
// cas stores the value but keeps the item stale. Each runs in its
// command's Exec, on the key's partition, so it is atomic as a whole.

// recache is mg's N, R and the stale item's win, after its read.
func (c *Cmd) recache(p *kv.Partition) {
	if !c.Vivify && !c.HasRecache && !c.Meta.Stale {
		return
	}
	created := false
	if c.Status == kv.StatusNotFound && c.Vivify {
		ttl := c.VivifyTTL
		if c.SetTTL && c.TLast {
			ttl = c.TTL // T after N: its TTL is the last one set
		}
		if _, st := p.Store(c.Hash, c.Key, nil, ttl, 0, kv.StoreAdd, 0); st != kv.StatusOK {
			return
		}
		if c.Version != 0 {
			p.SetVersion(c.Hash, c.Key, c.Version)
		}
		c.N, c.Meta, c.Status = p.PeekItem(c.Hash, c.Key, c.Out)
		created = c.Status == kv.StatusOK
		c.Created = created
	}
	if c.Status != kv.StatusOK {
		return
	}
	win := created
	// R compares the TTL left where it stands among the flags: T's, if T
	// came first.
	left, timed := c.Meta.Expires-p.Now(), c.Meta.Expires != 0 // p.Now() < Expires: the item is live
	if c.SetTTL && c.RAfterT {
		left, timed = c.TTL, c.TTL != 0
	}
	if c.HasRecache && !c.Meta.Won && !created && timed && left < c.Recache {
		win = true
	}
	if c.Meta.Stale && !c.Meta.Won {
		win = true
	}
	if win && p.SetRecache(c.Hash, c.Key, c.Meta.Stale, true) == kv.StatusOK {
		c.Win = true
	}
}

// staleStore is ms with I: a C older than the item's cas stores the value
// over it, keeping its TTL, its stale mark and its win token; it reports
// whether it did (else the store is an ordinary one).
func (c *Cmd) staleStore(p *kv.Partition) bool {
	if c.CAS == 0 || c.Mode != kv.StoreSet && c.Mode != kv.StoreReplace {
		return false
	}
	_, old, st := p.PeekItem(c.Hash, c.Key, nil)
	if st != kv.StatusOK && st != kv.StatusTooLarge || c.CAS >= old.Version {
		return false
	}
	var ttl uint32
	if old.Expires != 0 {
		ttl = max(old.Expires-p.Now(), 1) // p.Now() < Expires: the item is live
	}
	c.Meta.Version, c.Status = p.Store(c.Hash, c.Key, c.Value, ttl, c.Flags, kv.StoreSet, old.Version)
	if c.Status == kv.StatusOK {
		p.SetRecache(c.Hash, c.Key, true, old.Won)
	}
	return true
}

// noCAS0 answers a write with C0 as memcached: no item has cas 0, so it
// is EX, or NF without an item; it reports whether it answered.
func (c *Cmd) noCAS0(p *kv.Partition) bool {
	c.Status = kv.StatusExists
	if _, _, st := p.PeekItem(c.Hash, c.Key, nil); st == kv.StatusNotFound {
		c.Status = kv.StatusNotFound
	}
	return true
}

// delete is delete and md: with x it empties the item (metawrite.go),
// with I it invalidates (and with T sets the TTL), with C it acts only on
// the item of that cas.
func (c *Cmd) delete(p *kv.Partition) {
	switch {
	case c.CAS0 && c.noCAS0(p):
	case c.Tombstone:
		c.tombstone(p)
	case c.Invalid && !c.Expired:
		c.Meta.Version, c.Status = p.Invalidate(c.Hash, c.Key, c.CAS, c.SetTTL, c.TTL)
		c.setVersion(p)
	case c.CAS != 0:
		_, m, st := p.PeekItem(c.Hash, c.Key, nil)
		switch {
		case st != kv.StatusOK && st != kv.StatusTooLarge:
			c.Status = kv.StatusNotFound
		case m.Version != c.CAS:
			c.Status = kv.StatusExists
		default:
			c.Status = p.Delete(c.Hash, c.Key)
		}
	default:
		c.Status = p.Delete(c.Hash, c.Key)
	}
}

// recacheFlags writes mg's Z (the win token was handed out before), X
// (stale) and W (this mg won), in memcached's order.
func (c *conn) recacheFlags(m *Cmd) {
	if m.Meta.Won {
		c.w.WriteString(" Z")
	}
	if m.Meta.Stale {
		c.w.WriteString(" X")
	}
	if m.Win {
		c.w.WriteString(" W")
	}
}

package memcache

import "github.com/jakiro-kv/jakiro/kv"

// The meta writes as memcached 1.6 runs them (its do_store_item and
// do_add_delta, and the meta commands around them), each in its command's
// Exec, on the key's partition, so atomic as a whole:
//
//   - ms's C compares per mode: set and replace are a compare-and-swap
//     (EX, NF without an item; C0 matches nothing); add ignores it (NS
//     over an item, stored without one); append and prepend check it
//     only against an item there (C0: no check) and, without one, answer
//     NS, or with N store the value as a new item with N's TTL.
//   - ma's C (not 0) compares before the number is read; an empty value
//     is no number; N creates a missing item with J; T sets the TTL
//     after it, without making the item read.
//   - md's x replaces the item by an empty one with F's flags and T's TTL
//     that keeps its cas; with I it is then marked stale.
//   - E gives the written item that version (kv's SetVersion): an ms's
//     item, an md's stale or emptied one, an ma's, mg N's new one.

// setVersion gives the item just written E's version, if the command has
// one.
func (c *Cmd) setVersion(p *kv.Partition) {
	if c.Version != 0 && c.Status == kv.StatusOK && p.SetVersion(c.Hash, c.Key, c.Version) == kv.StatusOK {
		c.Meta.Version = c.Version
	}
}

// present reads whether key has an item, its value's length and Meta,
// without marking it.
func (c *Cmd) present(p *kv.Partition) (int, kv.Meta, bool) {
	n, m, st := p.PeekItem(c.Hash, c.Key, nil)
	return n, m, st == kv.StatusOK || st == kv.StatusTooLarge
}

// metaStore is ms; N is left the item's new size (ms's s).
func (c *Cmd) metaStore(p *kv.Partition) {
	cas, size := c.CAS, len(c.Value)
	switch c.Mode {
	case kv.StoreAdd:
		cas = 0
	case kv.StoreAppend, kv.StorePrepend:
		n, old, found := c.present(p)
		switch {
		case !found && c.Vivify:
			c.Meta.Version, c.Status = p.Store(c.Hash, c.Key, c.Value, c.VivifyTTL, c.Flags, kv.StoreAdd, 0)
			c.Created, c.N = c.Status == kv.StatusOK, size
			c.setVersion(p)
			return
		case !found:
			c.Status = kv.StatusNotStored
			return
		case c.CAS != 0 && old.Version != c.CAS:
			c.Status = kv.StatusExists
			return
		}
		cas, size = 0, n+size
	default:
		if c.CAS0 && c.noCAS0(p) || c.Invalid && c.staleStore(p) {
			c.N = size
			c.setVersion(p)
			return
		}
	}
	c.store(p, cas)
	c.N = size
	if !c.Expired {
		c.setVersion(p)
	}
}

// metaArith is ma.
func (c *Cmd) metaArith(p *kv.Partition) {
	n, old, found := c.present(p)
	switch {
	case !found && !c.Vivify:
		c.Status = kv.StatusNotFound
		return
	case found && n == 0:
		c.Status = kv.StatusNotNumeric
		return
	case found && c.CAS != 0 && old.Version != c.CAS:
		c.Status = kv.StatusExists
		return
	}
	ttl := c.VivifyTTL
	if c.SetTTL && c.TLast {
		ttl = c.TTL
	}
	c.Num, c.Meta.Version, c.Status = p.Incr(c.Hash, c.Key, c.Delta, c.Decr, !found, c.Initial, ttl, 0)
	if c.Status != kv.StatusOK {
		return
	}
	c.Created, c.Meta.Expires = !found, old.Expires
	switch {
	case c.SetTTL && c.Expired && (found || c.TLast):
		p.Delete(c.Hash, c.Key) // a TTL in the past: gone, once answered
		return
	case c.SetTTL && found:
		p.Retime(c.Hash, c.Key, c.TTL)
	}
	c.setVersion(p)
}

// tombstone is md with x: the item's value is replaced by an empty one.
func (c *Cmd) tombstone(p *kv.Partition) {
	_, old, found := c.present(p)
	switch {
	case !found:
		c.Status = kv.StatusNotFound
		return
	case c.CAS != 0 && old.Version != c.CAS:
		c.Status = kv.StatusExists
		return
	case c.Expired: // a TTL in the past: the empty item would be gone at once
		c.Status = p.Delete(c.Hash, c.Key)
		return
	}
	var ttl uint32
	if c.SetTTL {
		ttl = c.TTL
	}
	if _, c.Status = p.Store(c.Hash, c.Key, nil, ttl, c.Flags, kv.StoreSet, 0); c.Status != kv.StatusOK {
		return
	}
	if !c.Invalid {
		v := c.Version
		if v == 0 {
			v = old.Version
		}
		p.SetVersion(c.Hash, c.Key, v)
		return
	}
	c.Meta.Version, c.Status = p.Invalidate(c.Hash, c.Key, 0, false, 0)
	c.setVersion(p)
}

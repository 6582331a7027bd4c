package server

// The peers a partition looks at: the list it holds, its polled and
// warm sets, and the ringers the fabric names.

// reload moves to the latest peer list and drops unpublished peers from
// the polled set.
func (p *partition) reload() {
	s := p.srv
	gen := s.gen.Load()
	if gen == p.held {
		return
	}
	p.all = *s.list.Load()
	p.held = gen
	p.seen.Store(gen)
	p.prune(0, 0, true)
	if p.namesRingers {
		p.indexSources()
	}
}

// indexSources rebuilds bySrc from all, and notes in fresh the peers it
// did not index before.
func (p *partition) indexSources() {
	for _, c := range p.all {
		if c.src < 0 {
			continue
		}
		if c.src >= len(p.bySrc) {
			p.bySrc = append(p.bySrc, make([]*peer, c.src+1-len(p.bySrc))...)
		}
		if p.bySrc[c.src] != c {
			p.fresh = append(p.fresh, c)
		}
	}
	clear(p.bySrc)
	for _, c := range p.all {
		if c.src >= 0 {
			p.bySrc[c.src] = c
		}
	}
	// Fresh peers of an older list not looked at yet stay only while
	// published: an unpublished one may be freed once we hold this list.
	kept := p.fresh[:0]
	for _, c := range p.fresh {
		if p.bySrc[c.src] == c {
			kept = append(kept, c)
		}
	}
	clear(p.fresh[len(kept):])
	p.fresh = kept
}

// scanRingers serves the peers named as ringers since the last look (those
// not polled anyway).
func (p *partition) scanRingers(now int64) int {
	p.ringers = p.srv.ln.TakeRingers(p.id, p.ringers[:0])
	work := 0
	for _, src := range p.ringers {
		if src < len(p.bySrc) {
			if c := p.bySrc[src]; c != nil && !c.parts[p.id].polled {
				work += p.serveFrom(c, now)
			}
		}
	}
	return work
}

// wake ends an asleep spell: the partition says again which list it
// holds before it loads a newer one. Were it to load first, a reaper
// that still saw asleep could free a peer of the list just loaded.
func (p *partition) wake() { p.seen.Store(p.held) }

// prune moves from the polled set to the warm set the peers without a
// request since before cutoff, drops from the warm set those without one
// for warmHold, and drops gone or dead peers from both.
func (p *partition) prune(now, cutoff int64, goneOnly bool) {
	kept := p.polled[:0]
	for _, c := range p.polled {
		pp := &c.parts[p.id]
		gone := c.gone.Load() || c.dead.Load()
		if gone || !goneOnly && pp.lastReq < cutoff {
			pp.polled = false
			if !gone {
				c.sess.Unpump() // the fabric's thread reads it again
			}
			if !gone && !pp.warm && len(p.warm) < warmMax {
				pp.warm = true
				p.warm = append(p.warm, c)
			}
			continue
		}
		kept = append(kept, c)
	}
	clear(p.polled[len(kept):])
	p.polled = kept
	warm := p.warm[:0]
	for _, c := range p.warm {
		pp := &c.parts[p.id]
		if c.gone.Load() || c.dead.Load() || pp.polled || pp.lastReq < now-warmHold {
			pp.warm = false
			continue
		}
		warm = append(warm, c)
	}
	clear(p.warm[len(warm):])
	p.warm = warm
}

// scan serves the ready requests of peers, at most maxPerPass each, and
// returns how many it served.
func (p *partition) scan(peers []*peer, now int64) int {
	work := 0
	for _, c := range peers {
		work += p.serveFrom(c, now)
	}
	return work
}

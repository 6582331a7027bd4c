package server

import (
	"time"
)

// A partition's doorbell: how long an idle partition spins before it
// blocks on its bell, what a ring brings, and the sweep that finds
// ringers no mark explains.

// spinTime is how long an idle partition polls before blocking on its
// bell: from the configured minimum up to spinGrowth times it. A ring that
// ends a short sleep says a longer spin would have caught the request
// without the wake-up (microseconds to hundreds of them here): the spin
// doubles. A long sleep says the clients went quiet: it halves.
type spinTime struct{ ns, min, max int64 }

// spinGrowth bounds the adaptive spin, as a multiple of the minimum.
const spinGrowth = 10

func newSpin(min int64) spinTime { return spinTime{ns: min, min: min, max: spinGrowth * min} }

// slept adapts the spin after a sleep of d that a ring ended (rang) or
// that timed out.
func (t *spinTime) slept(d int64, rang bool) {
	switch {
	case rang && d < t.max:
		t.ns = min(2*t.ns, t.max)
	case !rang || d > 4*t.max:
		t.ns = max(t.ns/2, t.min)
	}
}

// bellPass is one pass of a partition with doorbells: the polled set, the
// warm set after a ring, the rings' accounting, and the next chunk of a
// sweep under way. It returns the requests served.
func (p *partition) bellPass(now int64) int {
	work := p.scan(p.polled, now)
	if p.ringerScan {
		p.ringerScan = false
		work += p.scanRingers(now)
	}
	if len(p.fresh) > 0 {
		work += p.scanFresh(now)
	}
	if p.warmScan {
		p.warmScan = false
		work += p.scan(p.warm, now)
	}
	if p.ringDebt > 0 {
		p.accountRings()
	}
	if p.sweeping {
		work += p.sweepStep(now)
	}
	return work
}

// checkBell waits up to d for the bell (d <= 0: only looks) and notes a
// ring.
func (p *partition) checkBell(d time.Duration) bool {
	rang, _ := p.srv.ln.WaitBell(p.id, d)
	if rang {
		p.rang(p.srv.ln.BellRings(p.id))
	}
	return rang
}

// rang notes that the bell rang, n rings in all so far (where the fabric
// counts them): the polled and warm sets are looked at in this pass, and
// the rings are accounted for after it.
func (p *partition) rang(n uint64) {
	p.bells++
	if p.namesRingers {
		p.ringerScan = true
	} else {
		p.warmScan = true
	}
	if !p.countsRings {
		p.startSweep()
		return
	}
	p.ringDebt += n - p.ringsSeen
	p.ringsSeen = n
	if p.ringDebt == 0 {
		p.startSweep() // a ring the fabric did not count
	}
}

// accountRings runs after a pass's polled and warm scans: rings that the
// FlagRang requests found cannot explain came from sessions this
// partition does not poll, so it looks at every session.
func (p *partition) accountRings() {
	if p.ringDebt > p.marks {
		p.startSweep()
	}
	p.ringDebt, p.marks = 0, 0
}

// startSweep (re)starts a look at every peer from where the last one
// stopped: a chunk of them per pass, beside the polled set, so a sweep
// over thousands of idle peers does not stall the active ones.
func (p *partition) startSweep() {
	if !p.sweeping {
		p.sweeps++
	}
	p.sweeping, p.sweepLeft = true, len(p.all)
}

// sweepStep looks at the sweep's next peers (those not polled anyway) and
// reports the requests it served.
func (p *partition) sweepStep(now int64) int {
	n := min(sweepChunk, p.sweepLeft, len(p.all))
	work := 0
	for i := 0; i < n; i++ {
		if p.sweepAt >= len(p.all) {
			p.sweepAt = 0
		}
		c := p.all[p.sweepAt]
		p.sweepAt++
		if !c.parts[p.id].polled {
			work += p.serveFrom(c, now)
		}
	}
	p.sweepLeft -= n
	if p.sweepLeft <= 0 || len(p.all) == 0 {
		p.sweeping = false
	}
	return work
}

// freshPolled bounds the new peers a partition polls before their first
// request: a burst of joins costs the established clients' passes at
// most this many looks more.
const freshPolled = 32

// scanFresh looks at the peers published since the last reload, and keeps
// polling those with nothing yet (up to freshPolled in the polled set),
// as if they had just sent a request: a client joins to send one, and
// its first is then found at the next pass rather than through its ring
// (a look at the ringers, or a wake-up). Those that send none leave the
// polled set after rfp.ActiveHold, as idle clients do.
func (p *partition) scanFresh(now int64) int {
	work := 0
	for _, c := range p.fresh {
		n := p.serveFrom(c, now)
		if pp := &c.parts[p.id]; n == 0 && !pp.polled && len(p.polled) < freshPolled && !c.dead.Load() && !c.gone.Load() {
			p.keepPolled(c, pp, now)
		}
		work += n
	}
	clear(p.fresh)
	p.fresh = p.fresh[:0]
	return work
}

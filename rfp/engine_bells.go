package rfp

import "math"

// bellState is the client's side of the doorbell contract (bells.go), per
// partition: a ring with a request after a quiet spell, and one ring
// schedule while requests stay unanswered, backing off from RingAfter to
// MaxRingGap.
type bellState struct {
	on         bool
	quiet      int64   // QuietRing for this fabric
	rings      []int   // partitions to ring once the pending ops are posted
	queued     []bool  // per partition: in rings
	reminder   []bool  // per partition: its queued ring announces no new request
	lastSubmit []int64 // per partition: when the last request was submitted
	answeredAt []int64 // per partition: when its last answer was taken
	unanswered []int   // per partition: requests sent and not answered
	ringAt     []int64 // per partition: the next ring for unanswered requests (Never: none wait)
	gap        []int64 // per partition: the wait after that ring
	blocked    func(p int) bool
	lookedAt   []int64 // per partition: when blocked was last asked (once per driver clock)
}

func newBellState(partitions int, on bool, quiet int64, blocked func(int) bool) bellState {
	if quiet <= 0 {
		quiet = QuietRing
	}
	b := bellState{on: on, quiet: quiet, blocked: blocked}
	if !on {
		return b
	}
	b.rings = make([]int, 0, partitions)
	b.queued = make([]bool, partitions)
	b.reminder = make([]bool, partitions)
	b.lastSubmit = make([]int64, partitions)
	b.answeredAt = make([]int64, partitions)
	b.unanswered = make([]int, partitions)
	b.ringAt = make([]int64, partitions)
	b.gap = make([]int64, partitions)
	b.lookedAt = make([]int64, partitions)
	for p := range b.lastSubmit {
		b.lastSubmit[p] = math.MinInt64 / 2 // the first request rings: the partition may sleep
		b.lookedAt[p] = math.MinInt64
		b.answeredAt[p] = math.MinInt64 / 2
		b.ringAt[p] = Never
	}
	return b
}

// ring queues a ring of p and counts it; a ring already queued covers it.
// A reminder rings only for requests already announced.
func (e *Engine) ring(p int, reminder bool) {
	b := &e.bells
	if b.queued[p] {
		b.reminder[p] = b.reminder[p] && reminder
		return
	}
	b.queued[p], b.reminder[p] = true, reminder
	b.rings = append(b.rings, p)
	e.stats.Rings++
}

// Reminder reports whether the ring of p that Rings returned only reminds
// p of requests it was told of (see fabric.BellWatcher): a driver that
// sees p awake may skip it, and says so with Unrung.
func (e *Engine) Reminder(p int) bool { return e.bells.on && e.bells.reminder[p] }

// Unrung says the driver skipped one ring Rings returned.
func (e *Engine) Unrung() { e.stats.Rings-- }

func (b *bellState) rang() {
	for _, p := range b.rings {
		b.queued[p] = false
	}
	b.rings = b.rings[:0]
}

// bellsOnSubmit: a request to p rings p when nothing went to p for
// QuietRing (the partition may have stopped polling this client or gone
// to sleep) or when p shows itself blocked on its bell, and starts p's
// schedule if none runs. It reports whether this request rings, so that
// it carries FlagRang.
func (e *Engine) bellsOnSubmit(p int, now int64) bool {
	b := &e.bells
	if !b.on {
		return false
	}
	quiet := now-b.lastSubmit[p] > b.quiet || b.blockedNow(p, now)
	b.lastSubmit[p] = now
	b.unanswered[p]++
	if quiet {
		e.ring(p, false)
	}
	if quiet || b.ringAt[p] == Never {
		b.ringAt[p], b.gap[p] = now+RingAfter, 2*RingAfter
		e.next = min(e.next, b.ringAt[p])
	}
	return quiet
}

// blockedNow asks whether p is blocked, once per driver clock reading: the
// requests of one pass to one partition share the answer (the first of
// them rings).
func (b *bellState) blockedNow(p int, now int64) bool {
	if b.blocked == nil || b.lookedAt[p] == now || now-b.answeredAt[p] < awakeAfterAnswer {
		return false
	}
	b.lookedAt[p] = now
	return b.blocked(p)
}

// bellsOnAnswer: p answered, so it is awake; its schedule restarts from
// now for the requests still unanswered, or stops.
func (e *Engine) bellsOnAnswer(p int, now int64) {
	b := &e.bells
	if !b.on {
		return
	}
	b.unanswered[p]--
	b.answeredAt[p] = now
	if b.unanswered[p] > 0 {
		b.ringAt[p], b.gap[p] = now+RingAfter, 2*RingAfter
	} else {
		b.ringAt[p] = Never
	}
}

// tickBells rings the partitions whose schedule fell due and returns the
// next ring time.
func (e *Engine) tickBells(now int64) int64 {
	b := &e.bells
	next := Never
	if !b.on {
		return next
	}
	for p, at := range b.ringAt {
		if at <= now {
			e.ring(p, true)
			b.ringAt[p] = now + b.gap[p]
			b.gap[p] = min(2*b.gap[p], MaxRingGap)
			e.refetchSoon(p)
			at = b.ringAt[p]
		}
		next = min(next, at)
	}
	return next
}

// refetchSoon restarts the retry backoff of p's oldest request: the
// partition is waking, so its result may come any moment now.
func (e *Engine) refetchSoon(p int) {
	if ps := &e.parts[p]; ps.qn > 0 {
		ps.head().reads = 0
	}
}

package server

import "time"

// A partition that polls shares its core when idle by yielding it
// (sched_yield). On a host with no free core that goes wrong: a yield to
// a CPU-bound thread gives it a whole scheduler slice (milliseconds), and
// requests wait that long, again and again. A thread that blocks and is
// woken, as memcached's do, is run at once instead. So an idle partition
// watches how long its yields take: one that returns this late says
// another thread was waiting for the core, and for a while the partition
// blocks on its doorbell for short dozes instead of yielding. A ring ends
// a doze at once; a request that did not ring (rfp/bells.go) waits at
// most one doze. It tries a yield again after the hold, a longer hold
// each time the host is still crowded.
const (
	// lateYield: a yield that kept the partition away this long gave the
	// core to a thread that wanted it for a slice (a yield with nobody
	// waiting returns in microseconds; other goroutines' threads, and
	// the clients beside us, run for microseconds to a millisecond). At
	// 200 µs a loop of joins (Dial, GET, Close) made its own partition
	// crowded (0.6-1.2 dozes a join): each join's work took the core for
	// a few hundred microseconds, and its first GET then waited for the
	// partition's wake-up. A slice is milliseconds.
	lateYield = int64(time.Millisecond)
	// crowdWindow and crowdAway: the yields of a window of at least
	// crowdWindow are judged together; the host is crowded when late
	// yields kept the partition away for crowdAway of it or more. A busy
	// host with a free core loses a late yield now and then (twenty a
	// second beside go-ycsb on 2 cores, most under a millisecond); one
	// with no free core loses slices one after another.
	crowdWindow = int64(10 * time.Millisecond)
	crowdAway   = 2 // a half
	// crowdDoze: one block on the bell while crowded.
	crowdDoze = 50 * time.Microsecond
	// crowdHoldMin and crowdHoldMax bound how long a partition dozes
	// instead of yielding before it judges a window of yields again:
	// each look costs a window of lost slices where the host is still
	// crowded.
	crowdHoldMin = int64(20 * time.Millisecond)
	crowdHoldMax = int64(time.Second)
)

// crowdWatch is an idle partition's view of its host: crowded (no free
// core) or not. It is a pure state machine over the clock.
type crowdWatch struct {
	until int64 // crowded until then
	hold  int64 // the last hold
	start int64 // the window's first yield; 0: none yet
	away  int64 // time lost in the window's late yields
}

// crowded reports whether an idle partition should doze rather than yield.
func (c *crowdWatch) crowded(now int64) bool { return now < c.until }

// yielded notes a yield that started at start and returned at end.
func (c *crowdWatch) yielded(start, end int64) {
	if c.start == 0 {
		c.start = start
	}
	if d := end - start; d >= lateYield {
		c.away += d
	}
	window := end - c.start
	if window < crowdWindow {
		return
	}
	if c.away*crowdAway >= window {
		c.hold = min(max(2*c.hold, crowdHoldMin), crowdHoldMax)
		c.until = end + c.hold
	} else {
		c.hold = 0
	}
	c.start, c.away = 0, 0
}

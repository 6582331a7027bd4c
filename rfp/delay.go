package rfp

// FetchDelay is how long a client waits after sending a request before its
// first fetch READ. Reading too early costs a wasted READ (a round trip);
// too late costs latency. It adapts AIMD-style towards rare not-ready
// first READs (about 1%, the paper's "2 round trips"): a near miss adds
// 1/16, a hit removes 1/16384, or 1/4096 for a request alone in flight:
// alone, a miss costs one quick retry the caller waits on anyway while all
// of the delay is latency; in a window, misses are fabric operations the
// other requests queue behind. Misses come in
// bursts (a stalled server misses every request in flight), so it grows at
// most once per generation: a miss of a request sent before the last
// increase says nothing new. Fixed delays (including zero) are allowed. A
// pure state machine over nanoseconds.
type FetchDelay struct {
	ns     int64 // scaled by 1<<delayShift so small delays still shrink
	fixed  bool
	raised int64 // when the delay last grew
	trip   int64 // a READ's round trip, smoothed (0: none seen yet)
}

const (
	delayShift    = 12
	minFetchDelay = 50 // ns
	// maxFetchDelay caps the delay so a latency tail (a dozing or
	// descheduled server) cannot drag every request's first READ late,
	// unless READs themselves take longer: the cap is tripCap READ round
	// trips where that is more (a slow NIC answers slowly too: soft-RoCE
	// under emulation takes ~100 us a READ, and a 20 us cap had every
	// request miss its first READ), and never more than maxTripDelay.
	maxFetchDelay = 20_000 // ns
	tripCap       = 4
	maxTripDelay  = 2_000_000 // ns
)

// NewFetchDelay returns an adaptive delay when fixedNS < 0, else a fixed one.
func NewFetchDelay(fixedNS int64) FetchDelay {
	if fixedNS >= 0 {
		return FetchDelay{ns: fixedNS << delayShift, fixed: true}
	}
	return FetchDelay{ns: 1000 << delayShift, raised: -1}
}

// NS is the current delay.
func (d *FetchDelay) NS() int64 { return d.ns >> delayShift }

// OnFirstRead records whether the first fetch of a request sent at sentNS
// found it ready; nowNS is the time of the answer; alone says the request
// was the only one in flight.
func (d *FetchDelay) OnFirstRead(ready, alone bool, sentNS, nowNS int64) {
	if d.fixed {
		return
	}
	if ready {
		if alone {
			d.ns -= d.ns >> 12
		} else {
			d.ns -= d.ns >> 14
		}
		d.ns = max(d.ns, minFetchDelay<<delayShift)
		return
	}
	if sentNS <= d.raised {
		return // same burst as the last increase
	}
	d.raised = nowNS
	d.ns += d.ns>>4 + 16<<delayShift
	d.ns = min(d.ns, d.limit()<<delayShift)
}

// OnReadTrip notes the round trip of a fetch READ (posted to completed).
func (d *FetchDelay) OnReadTrip(ns int64) {
	switch {
	case ns <= 0:
	case d.trip == 0:
		d.trip = ns
	default:
		d.trip += (ns - d.trip) / 8
	}
}

// limit is the longest the delay may grow to.
func (d *FetchDelay) limit() int64 { return min(max(maxFetchDelay, tripCap*d.trip), maxTripDelay) }

package rfp

// FetchDelay is how long a client waits after sending a request before its
// first fetch READ. Reading too early costs a wasted READ (a round trip);
// too late costs latency. It adapts AIMD-style towards about one not-ready
// first READ in 256: a miss adds 1/16, a hit removes 1/4096. Fixed delays
// (including zero) are allowed. A pure state machine over nanoseconds.
type FetchDelay struct {
	ns    int64 // scaled by 1<<12 so small delays still shrink
	fixed bool
}

const delayShift = 12

const (
	minFetchDelay = 50      // ns
	// maxFetchDelay caps the delay so a latency tail (a dozing or
	// descheduled server) cannot drag every request's first READ late.
	maxFetchDelay = 20_000 // ns
)

// NewFetchDelay returns an adaptive delay when fixedNS < 0, else a fixed one.
func NewFetchDelay(fixedNS int64) FetchDelay {
	if fixedNS >= 0 {
		return FetchDelay{ns: fixedNS << delayShift, fixed: true}
	}
	return FetchDelay{ns: 1000 << delayShift}
}

// NS is the current delay.
func (d *FetchDelay) NS() int64 { return d.ns >> delayShift }

// OnFirstRead records whether a request's first fetch found it ready.
func (d *FetchDelay) OnFirstRead(ready bool) {
	if d.fixed {
		return
	}
	if ready {
		d.ns -= d.ns >> 12
		d.ns = max(d.ns, minFetchDelay<<delayShift)
		return
	}
	d.ns += d.ns>>4 + 16<<delayShift
	d.ns = min(d.ns, maxFetchDelay<<delayShift)
}

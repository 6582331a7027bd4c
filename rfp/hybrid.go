package rfp

// Hybrid decides, per request, between fetching (RFP) and asking the server
// to reply (the EuroSys RFP paper's hybrid mode). As in the paper, R
// consecutive not-ready READs switch it to replies at once. Beyond that it
// learns which mode answers faster on this connection: it keeps a moving
// average of each mode's request latency, tries the mode it is not in for
// probeLen requests after every probe wait, and settles on the faster.
// A probe that loses doubles the wait before the next one (up to 64 times
// ProbeOps); one that wins resets it. Where a READ costs a message, as over
// tcp, replies win and hybrid settles on them; where READs are cheap (shm,
// RDMA) fetching wins unless the server falls behind. A pure state machine.
type Hybrid struct {
	R        int // consecutive not-ready READs that switch to reply
	ProbeOps int // requests between probes of the other mode, at first
	replying bool
	streak   int

	mean       [2]int64 // latency moving average, ns: [fetch, reply]; 0 unknown
	probing    bool     // requests now go the other way, to measure it
	probeLeft  int
	untilProbe int
	probeWait  int
}

// probeLen is how many requests a probe sends the other way: enough for
// the moving average to forget that mode's older latency.
const probeLen = 16

// betterBy: a probed mode must be this much faster (in 1/8ths: 7/8 of the
// current mode's latency) to take over, so noise does not flip modes.
const betterBy = 7

// NewHybrid returns a hybrid policy; r <= 0 and probe <= 0 take defaults
// (3 and 256 requests).
func NewHybrid(r, probe int) *Hybrid {
	if r <= 0 {
		r = 3
	}
	if probe <= 0 {
		probe = 256
	}
	return &Hybrid{R: r, ProbeOps: probe, probeWait: probe, untilProbe: probe}
}

// Reply says whether the next request should ask for a server reply.
func (h *Hybrid) Reply() bool { return h.replying != h.probing }

// OnFetch records one fetch READ result.
func (h *Hybrid) OnFetch(ready bool) {
	if ready {
		h.streak = 0
		return
	}
	h.streak++
	if h.streak >= h.R && !h.replying && !h.probing {
		h.settle(true, false)
	}
}

// OnDone records a finished request: whether the server replied, and its
// latency from submission.
func (h *Hybrid) OnDone(replied bool, ns int64) {
	m := &h.mean[0]
	if replied {
		m = &h.mean[1]
	}
	if *m == 0 {
		*m = max(ns, 1)
	} else {
		*m += (ns - *m) / 4
	}
	if h.probing {
		if h.probeLeft--; h.probeLeft <= 0 {
			h.probing = false
			other := !h.replying
			if h.faster(other) {
				h.settle(other, true)
			} else {
				h.settle(h.replying, false)
			}
		}
		return
	}
	if h.untilProbe--; h.untilProbe <= 0 {
		h.probing, h.probeLeft, h.streak = true, probeLen, 0
	}
}

// faster says whether mode replying's latency beats the other's by betterBy.
func (h *Hybrid) faster(replying bool) bool {
	a, b := h.mean[0], h.mean[1]
	if replying {
		a, b = b, a
	}
	return a > 0 && (b == 0 || 8*a < betterBy*b)
}

// settle moves to a mode and schedules the next probe: ProbeOps after a
// move the latencies justified (won), later and later after others.
func (h *Hybrid) settle(replying, won bool) {
	h.replying, h.streak = replying, 0
	if won {
		h.probeWait = h.ProbeOps
	}
	h.untilProbe = h.probeWait
	if !won && h.probeWait < 64*h.ProbeOps {
		h.probeWait *= 2
	}
}

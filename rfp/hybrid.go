package rfp

// Hybrid decides, per request, between fetching (RFP) and asking the server
// to reply (the EuroSys RFP paper's hybrid mode), and keeps the mode that
// serves this connection faster. It measures each mode's cost as wall
// time per finished request while it is in that mode (so what it compares
// is throughput on this connection and workload, not one request's
// latency: with a window of requests in flight the two differ), tries the
// mode it is not in for probeLen requests after every probe wait, and
// settles on the cheaper. A probe that loses doubles the wait before the
// next one (up to 64 times ProbeOps); one that wins resets it, and so
// does a change of load: ProbeOps requests whose cost moved by more than
// loadShift from the mode's last measure start a probe at once.
// As in the paper, R consecutive not-ready READs switch it to replies at
// once, unless fetching was measured cheaper since. A pure state machine.
type Hybrid struct {
	R        int // consecutive not-ready READs that switch to reply
	ProbeOps int // requests between probes of the other mode, at first
	replying bool
	streak   int

	cost       [2]int64 // ns per finished request: [fetch, reply]; 0 unknown
	phase      phase    // the mode being measured now
	window     phase    // its last ProbeOps requests, to see the load change
	probing    bool     // requests now go the other way, to measure it
	probeLeft  int
	untilProbe int
	probeWait  int
}

// phase measures one mode's wall time per finished request.
type phase struct {
	n    int
	busy int64 // ns between this phase's completions, idle gaps capped
	last int64
}

// idleGap caps what one gap between completions adds to a phase: a
// connection idle between bursts is not slow.
const idleGap = 2_000_000 // ns

func (p *phase) add(now int64) {
	if p.n > 0 {
		p.busy += min(now-p.last, idleGap)
	}
	p.n++
	p.last = now
}

// ns is the phase's cost per request; 0 if too few requests finished.
func (p *phase) ns() int64 {
	if p.n < 2 {
		return 0
	}
	return max(p.busy/int64(p.n-1), 1)
}

// probeLen is how many requests a probe sends the other way, at least,
// and probeNS how long it measures them, at least.
const (
	probeLen = 16
	probeNS  = 500_000
)

// betterBy: a probed mode must be this much cheaper (in 1/8ths: 7/8 of
// the current mode's cost) to take over, so noise does not flip modes.
const betterBy = 7

// loadShift: ProbeOps requests whose cost is this many times what the
// mode last measured (or a fraction as small) mean the load changed.
const loadShift = 2

// NewHybrid returns a hybrid policy that starts by fetching; r <= 0 and
// probe <= 0 take defaults (3 and 256 requests).
func NewHybrid(r, probe int) *Hybrid {
	if r <= 0 {
		r = 3
	}
	if probe <= 0 {
		probe = 256
	}
	return &Hybrid{R: r, ProbeOps: probe, probeWait: probe, untilProbe: probe}
}

// StartReplying makes a new policy begin with replies.
func (h *Hybrid) StartReplying() { h.replying = true }

// Reply says whether the next request should ask for a server reply.
func (h *Hybrid) Reply() bool { return h.replying != h.probing }

// OnFetch records one fetch READ result.
func (h *Hybrid) OnFetch(ready bool) {
	if ready {
		h.streak = 0
		return
	}
	h.streak++
	if h.streak >= h.R && !h.replying && !h.probing && !h.fetchCheaper() {
		h.settle(true, false)
	}
}

// fetchCheaper: fetching was measured clearly cheaper than replies.
func (h *Hybrid) fetchCheaper() bool {
	f, r := h.cost[0], h.cost[1]
	return f > 0 && r > 0 && 8*f < betterBy*r
}

// OnDone records a finished request: whether the server replied, its
// latency from submission, and the time now.
func (h *Hybrid) OnDone(replied bool, _, now int64) {
	if replied != h.Reply() {
		return // sent before the last switch: not this phase's
	}
	h.phase.add(now)
	mode := b2i(replied)
	if h.probing {
		// A probe measures at least probeLen requests over probeNS, so a
		// burst that a quiet server answers at once is not taken for its
		// steady rate.
		if h.probeLeft--; h.probeLeft <= 0 && h.phase.busy >= probeNS {
			h.probing = false
			h.cost[mode] = h.phase.ns()
			h.phase = phase{}
			if h.cost[mode] > 0 && (h.cost[1-mode] == 0 || 8*h.cost[mode] < betterBy*h.cost[1-mode]) {
				h.settle(replied, true)
			} else {
				h.settle(h.replying, false)
			}
		}
		return
	}
	h.window.add(now)
	if h.window.n >= h.ProbeOps {
		if ns, old := h.window.ns(), h.cost[mode]; old > 0 && (ns > loadShift*old || loadShift*ns < old) {
			// The load changed: measure both modes again now, this one
			// by its last requests.
			h.probeWait, h.untilProbe = h.ProbeOps, 0
			h.cost[mode], h.phase = ns, phase{}
		}
		h.window = phase{}
	}
	if h.untilProbe--; h.untilProbe <= 0 {
		if ns := h.phase.ns(); ns > 0 {
			h.cost[mode] = ns
		}
		h.phase, h.window = phase{}, phase{}
		h.probing, h.probeLeft, h.streak = true, probeLen, 0
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// settle moves to a mode and schedules the next probe: ProbeOps after a
// move the costs justified (won), later and later after others.
func (h *Hybrid) settle(replying, won bool) {
	if replying != h.replying {
		h.phase, h.window = phase{}, phase{}
	}
	h.replying, h.streak = replying, 0
	if won {
		h.probeWait = h.ProbeOps
	}
	h.untilProbe = h.probeWait
	if !won && h.probeWait < 64*h.ProbeOps {
		h.probeWait *= 2
	}
}

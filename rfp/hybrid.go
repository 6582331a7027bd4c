package rfp

// Hybrid decides, per request, between fetching (RFP) and asking the server
// to reply (the EuroSys RFP paper's hybrid mode): after R consecutive
// not-ready READs the client asks for replies; after a while in reply mode
// it probes fetching again, and stays there if fetching pays. Failed
// probes back off exponentially. A pure state machine.
type Hybrid struct {
	R         int // consecutive not-ready READs that switch to reply
	ProbeOps  int // reply-mode operations before probing fetch again
	replying  bool
	streak    int
	left      int
	probeWait int
}

// NewHybrid returns a hybrid policy; r <= 0 and probe <= 0 take defaults
// (3 and 256 operations).
func NewHybrid(r, probe int) *Hybrid {
	if r <= 0 {
		r = 3
	}
	if probe <= 0 {
		probe = 256
	}
	return &Hybrid{R: r, ProbeOps: probe, probeWait: probe}
}

// Reply says whether the next request should ask for a server reply.
func (h *Hybrid) Reply() bool { return h.replying }

// OnFetch records one fetch READ result.
func (h *Hybrid) OnFetch(ready bool) {
	if ready {
		h.streak = 0
		h.probeWait = h.ProbeOps // fetching pays: forget past failures
		return
	}
	h.streak++
	if h.streak >= h.R && !h.replying {
		h.replying, h.streak, h.left = true, 0, h.probeWait
		if h.probeWait < 64*h.ProbeOps {
			h.probeWait *= 2
		}
	}
}

// OnReplied records one operation completed in reply mode.
func (h *Hybrid) OnReplied() {
	if !h.replying {
		return
	}
	if h.left--; h.left <= 0 {
		h.replying = false
	}
}

package rfp

import (
	"fmt"
	"math"
)

// Mode is how a client gets its results.
type Mode uint8

const (
	// ModeRFP: the client fetches results with one-sided READs (default).
	ModeRFP Mode = iota
	// ModeReply: the server WRITEs results into client memory (baseline).
	ModeReply
	// ModeHybrid: fetch, and switch to replies while fetching does not pay.
	ModeHybrid
	// ModeAuto is what a client picks when not told: RFP where the
	// server's NIC serves READs without its CPU (shm, RDMA); hybrid,
	// starting with replies and keeping whichever mode serves the
	// connection faster by measured cost alone, where a READ costs that
	// CPU a message, as a reply does (tcp). On shm a per-connection
	// measure misleads: a process's connections share the server's cores,
	// and measured one by one, replies looked cheaper where they cost the
	// server 4x more per operation (results/README.md).
	ModeAuto
)

// Resolve is the mode a client runs: m, or for ModeAuto the one that
// suits a fabric whose NIC is (softNIC) or is not a host thread.
func (m Mode) Resolve(softNIC bool) Mode {
	if m != ModeAuto || softNIC {
		return m
	}
	return ModeRFP
}

func (m Mode) String() string {
	switch m {
	case ModeRFP:
		return "rfp"
	case ModeReply:
		return "reply"
	case ModeHybrid:
		return "hybrid"
	case ModeAuto:
		return "auto"
	}
	return "mode?"
}

// ParseMode reads "rfp", "reply", "hybrid" or "auto".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "auto":
		return ModeAuto, nil
	case "rfp", "":
		return ModeRFP, nil
	case "reply", "server-reply":
		return ModeReply, nil
	case "hybrid":
		return ModeHybrid, nil
	}
	return 0, fmt.Errorf("rfp: unknown mode %q (want rfp, reply, hybrid or auto)", s)
}

// ReplyPolicy is a mode as the engine uses it: it decides, request by
// request, whether to ask the server to WRITE the response (FlagReply), and
// learns from how requests finished. The engine consults nothing else about
// the mode.
type ReplyPolicy interface {
	// Reply says whether the next request should ask for a server reply.
	Reply() bool
	// OnFetch records one fetch READ that found the result ready or not.
	OnFetch(ready bool)
	// OnDone records one finished request: whether the server replied,
	// its latency from submission and the time now, in nanoseconds.
	OnDone(replied bool, ns, now int64)
}

// Policy is mode m's reply policy; hybridR is Hybrid's not-ready streak
// (0: default); startReply begins ModeAuto with replies.
func (m Mode) Policy(hybridR int, startReply bool) ReplyPolicy {
	switch m {
	case ModeReply:
		return alwaysReply{}
	case ModeHybrid:
		return NewHybrid(hybridR, 0)
	case ModeAuto:
		// Auto (on a soft NIC; see Resolve) goes by measured cost alone:
		// no miss streak moves it.
		h := NewHybrid(hybridR, 0)
		h.R = math.MaxInt
		if startReply {
			h.StartReplying()
		}
		return h
	}
	return neverReply{}
}

// neverReply is ModeRFP: every result is fetched.
type neverReply struct{}

func (neverReply) Reply() bool               { return false }
func (neverReply) OnFetch(bool)              {}
func (neverReply) OnDone(bool, int64, int64) {}

// alwaysReply is ModeReply: the server WRITEs every result.
type alwaysReply struct{}

func (alwaysReply) Reply() bool               { return true }
func (alwaysReply) OnFetch(bool)              {}
func (alwaysReply) OnDone(bool, int64, int64) {}

package client

import "github.com/jakiro-kv/jakiro/rfp"

// Mode is how a client gets its results; see WithMode.
type Mode = rfp.Mode

const (
	ModeRFP    = rfp.ModeRFP    // fetch results with one-sided READs
	ModeReply  = rfp.ModeReply  // the server WRITEs results into client memory
	ModeHybrid = rfp.ModeHybrid // fetch or ask for replies, whichever serves faster
	// ModeAuto (default): ModeRFP on shm:// and rdma://; on tcp://,
	// where a READ costs the server's CPU a message, hybrid starting with
	// replies and keeping the mode that serves the connection faster.
	ModeAuto = rfp.ModeAuto
)

// ParseMode reads "rfp", "reply", "hybrid" or "auto".
func ParseMode(s string) (Mode, error) { return rfp.ParseMode(s) }

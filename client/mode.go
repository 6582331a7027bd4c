package client

import "github.com/jakiro-kv/jakiro/rfp"

// Mode is how a client gets its results; see WithMode.
type Mode = rfp.Mode

const (
	ModeRFP    = rfp.ModeRFP    // fetch results with one-sided READs
	ModeReply  = rfp.ModeReply  // the server WRITEs results into client memory
	ModeHybrid = rfp.ModeHybrid // fetch or ask for replies, whichever serves faster
	// ModeAuto (default): hybrid, starting by fetching on shm:// and
	// rdma:// and with replies on tcp://, where a READ costs the server's
	// CPU a message; it keeps the mode that serves this connection and
	// workload faster, and measures again when the load changes.
	ModeAuto = rfp.ModeAuto
)

// ParseMode reads "rfp", "reply", "hybrid" or "auto".
func ParseMode(s string) (Mode, error) { return rfp.ParseMode(s) }

package client

import "github.com/jakiro-kv/jakiro/rfp"

// Mode is how a client gets its results; see WithMode.
type Mode = rfp.Mode

const (
	ModeRFP    = rfp.ModeRFP    // fetch results with one-sided READs (default)
	ModeReply  = rfp.ModeReply  // the server WRITEs results into client memory
	ModeHybrid = rfp.ModeHybrid // fetch; ask for replies while fetching does not pay
)

// ParseMode reads "rfp", "reply" or "hybrid".
func ParseMode(s string) (Mode, error) { return rfp.ParseMode(s) }

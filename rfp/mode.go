package rfp

import "fmt"

// Mode is how a client gets its results.
type Mode uint8

const (
	// ModeRFP: the client fetches results with one-sided READs (default).
	ModeRFP Mode = iota
	// ModeReply: the server WRITEs results into client memory (baseline).
	ModeReply
	// ModeHybrid: fetch, and switch to replies while fetching does not pay.
	ModeHybrid
)

func (m Mode) String() string {
	switch m {
	case ModeRFP:
		return "rfp"
	case ModeReply:
		return "reply"
	case ModeHybrid:
		return "hybrid"
	}
	return "mode?"
}

// ParseMode reads "rfp", "reply" or "hybrid".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "rfp", "":
		return ModeRFP, nil
	case "reply", "server-reply":
		return ModeReply, nil
	case "hybrid":
		return ModeHybrid, nil
	}
	return 0, fmt.Errorf("rfp: unknown mode %q (want rfp, reply or hybrid)", s)
}

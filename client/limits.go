package client

import "github.com/jakiro-kv/jakiro/rfp"

// Limits of the protocol, for callers that size keys, values and options.
const (
	MaxKeyLen   = rfp.MaxKeyLen   // longest key
	MaxValueLen = rfp.MaxValueLen // longest value any server can hold
	MinRFS      = rfp.MinRFS      // smallest remote fetch size (an empty value)
	// DefaultWindow is the ring depth a server grants by default: the
	// outstanding requests per partition when WithWindow is not given.
	DefaultWindow = rfp.DefaultSlots
)

// RFSFor is the remote fetch size that brings a value of n bytes back in
// one READ.
func RFSFor(n int) int { return rfp.RFSFor(n) }

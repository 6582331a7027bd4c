package client

import "github.com/jakiro-kv/jakiro/rfp"

// Counters count what a client's protocol engine did: requests, fabric
// WRITEs and READs, retries, replies and doorbell rings (see
// FabricOpsPerOp and RingsPerOp).
type Counters = rfp.Counters

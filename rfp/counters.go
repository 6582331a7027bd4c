package rfp

// Counters count what an engine did. Fabric operations per request =
// (Writes + Reads) / Ops; doorbell rings per request = Rings / Ops.
type Counters struct {
	Ops        uint64 // requests completed
	Writes     uint64 // request WRITEs
	Reads      uint64 // fetch READs of every kind
	NotReady   uint64 // READs that found no result yet (retries)
	ExtraReads uint64 // second READs for values longer than RFS
	Torn       uint64 // fetches that saw a torn record and were repeated
	Replied    uint64 // requests answered by a server WRITE
	Rings      uint64 // doorbell rings (bells.go: after a quiet spell, for unanswered requests)
}

// FabricOpsPerOp is (Writes+Reads)/Ops.
func (c Counters) FabricOpsPerOp() float64 {
	if c.Ops == 0 {
		return 0
	}
	return float64(c.Writes+c.Reads) / float64(c.Ops)
}

// RingsPerOp is Rings/Ops.
func (c Counters) RingsPerOp() float64 {
	if c.Ops == 0 {
		return 0
	}
	return float64(c.Rings) / float64(c.Ops)
}

// Sub is c - o, for measuring an interval.
func (c Counters) Sub(o Counters) Counters {
	return Counters{c.Ops - o.Ops, c.Writes - o.Writes, c.Reads - o.Reads, c.NotReady - o.NotReady,
		c.ExtraReads - o.ExtraReads, c.Torn - o.Torn, c.Replied - o.Replied, c.Rings - o.Rings}
}

// Add is c + o.
func (c Counters) Add(o Counters) Counters {
	return Counters{c.Ops + o.Ops, c.Writes + o.Writes, c.Reads + o.Reads, c.NotReady + o.NotReady,
		c.ExtraReads + o.ExtraReads, c.Torn + o.Torn, c.Replied + o.Replied, c.Rings + o.Rings}
}

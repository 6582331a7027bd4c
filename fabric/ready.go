package fabric

// ReadyCounter is implemented by listeners that prepare connections'
// resources before anyone dials (Options.Ready), so that a monitor can
// see the pool: its bound, what is ready now, and how many joins took a
// prepared one or found none.
type ReadyCounter interface {
	ReadyStats() ReadyStats
}

// ReadyStats describes a listener's pool of prepared connections.
type ReadyStats struct {
	Size   int    // the bound: Options.Ready
	Ready  int    // prepared and waiting now
	Taken  uint64 // joins that took a prepared one
	Missed uint64 // joins that found the pool empty and made their own
}

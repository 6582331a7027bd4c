package fabric

import "sync/atomic"

// Region is a registered memory region: off-heap memory (never scanned or
// moved by the Go GC) that belongs to one connection's protection domain.
// Providers build it with NewRegion.
type Region struct {
	mem    []byte
	desc   Desc
	handle uint64
	free   func() error
	closed atomic.Bool
}

// NewRegion is for providers: mem is the region's local memory, desc what
// the peer uses to reach it, handle a provider-private value (the lkey for
// verbs), free what Close runs once.
func NewRegion(mem []byte, desc Desc, handle uint64, free func() error) *Region {
	return &Region{mem: mem, desc: desc, handle: handle, free: free}
}

// Bytes is the region's local memory. The peer may read or write it at any
// time; see the ordering contract in the package doc.
func (r *Region) Bytes() []byte { return r.mem }

// Len is the region's size in bytes.
func (r *Region) Len() int { return len(r.mem) }

// Desc is what the peer needs to address this region.
func (r *Region) Desc() Desc { return r.desc }

// Handle is the provider-private value given to NewRegion.
func (r *Region) Handle() uint64 { return r.handle }

// Close deregisters the region. Its memory must not be used afterwards.
func (r *Region) Close() error {
	if r.closed.Swap(true) || r.free == nil {
		return nil
	}
	return r.free()
}

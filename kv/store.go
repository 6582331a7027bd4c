package kv

import (
	"errors"
	"unsafe"
)

// Store is a set of partitions sharing one memory budget. Its accessors
// may be called from any goroutine; each Partition belongs to one
// goroutine, and Close must wait until those have stopped using them.
type Store struct {
	cfg    Config
	geo    geometry
	parts  []*Partition
	frees  []func() error
	coarse bool
	closed bool
}

// New builds a store. It returns a clear error on a nonsense Config: a
// negative or too large field, an unknown Mode, or a Memory too small for
// the partitions and MaxValue.
func New(cfg Config) (*Store, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	g, err := cfg.layout()
	if err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, geo: g}
	if cfg.Now == nil {
		acquireCoarse()
		s.coarse = true
		s.cfg.Now = coarseNow
		cfg.Now = coarseNow
	}
	for i := 0; i < cfg.Partitions; i++ {
		mem, free, err := allocRegion(int(g.region))
		if err != nil {
			_ = s.Close()
			return nil, err
		}
		s.frees = append(s.frees, free)
		s.parts = append(s.parts, newPartition(cfg, g, mem))
	}
	return s, nil
}

// unsafeWords views an 8-byte aligned byte slice as words.
func unsafeWords(b []byte) []uint64 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), len(b)/8)
}

// NumPartitions is the number of partitions.
func (s *Store) NumPartitions() int { return len(s.parts) }

// PartitionOf returns the partition for a key hash. It uses hash bits
// 32..47, disjoint from the bucket (0..31) and tag (48..63) bits.
func (s *Store) PartitionOf(hash uint64) int { return partitionOf(hash, s.cfg.Partitions) }

// Partition returns partition i, 0 <= i < NumPartitions.
func (s *Store) Partition(i int) *Partition { return s.parts[i] }

// Config returns the store's configuration with defaults filled in.
func (s *Store) Config() Config { return s.cfg }

// Now returns the store's clock in seconds: Config.Now, or the coarse Unix
// clock. A memcached front end converts an absolute exptime (more than 30
// days) to the relative TTL that Put takes with it.
func (s *Store) Now() uint32 { return s.cfg.Now() }

// Close frees the off-heap memory. Call it once the partitions' owners
// have stopped; the partitions must not be used afterwards (they are
// emptied, so a late call panics rather than reading freed memory).
// Closing twice is a no-op.
func (s *Store) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, p := range s.parts {
		*p = Partition{}
	}
	for _, free := range s.frees {
		if err := free(); err != nil {
			errs = append(errs, err)
		}
	}
	s.frees = nil
	if s.coarse {
		releaseCoarse()
	}
	return errors.Join(errs...)
}

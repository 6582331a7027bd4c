package kv

import (
	"fmt"
	"math"
	"strconv"

	"github.com/jakiro-kv/jakiro/internal/bytesize"
)

// Mode selects what a full partition does.
type Mode uint8

const (
	// ModeCache (the default) overwrites the oldest items when the log
	// wraps and evicts a slot when a bucket chain is full.
	ModeCache Mode = iota
	// ModeStore never evicts: Put beyond capacity returns StatusNoMemory.
	ModeStore
)

// String returns "cache" or "store".
func (m Mode) String() string {
	switch m {
	case ModeCache:
		return "cache"
	case ModeStore:
		return "store"
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// Defaults and limits of Config.
const (
	MaxKeyLen          = 250     // longest key in bytes, as memcached
	DefaultPartitions  = 4       // Config.Partitions when 0
	DefaultMemory      = 1 << 30 // Config.Memory when 0: 1 GiB
	DefaultMaxValue    = 1 << 20 // Config.MaxValue when 0: 1 MiB
	DefaultAvgItemSize = 48      // Config.AvgItemSize when 0
	MaxPartitions      = 1 << 16 // partitions are chosen from 16 hash bits
	MaxMaxValue        = 1 << 30 // largest Config.MaxValue: 1 GiB, as memcached -I
)

// Config configures a Store. The zero value is a valid 1 GiB cache with 4
// partitions.
type Config struct {
	// Partitions is the number of EREW partitions, each to be owned by one
	// goroutine. Default 4, at most MaxPartitions.
	Partitions int
	// Memory is the total budget in bytes for all partitions, index and
	// logs included, split evenly among the partitions. Default 1 GiB.
	// ParseSize reads "--memory 1GiB" style values.
	Memory int64
	// MaxValue is the largest value in bytes. Default 1 MiB, at most 1 GiB.
	// Each partition's log keeps an overhang of one maximum item, and must
	// hold at least two of them.
	MaxValue int
	// Mode is ModeCache (default) or ModeStore.
	Mode Mode
	// ApproxLRU re-appends, in cache mode, an item that is hit while in the
	// oldest eighth of the log, so items in use survive the log's wrap.
	ApproxLRU bool
	// AccessTimes has every item carry the time it was last written or
	// read (Meta.Accessed: memcached's last access, which its meta
	// protocol reports), 4 bytes more per item. Reads set it only when it
	// changed, at most once a second per item. Off, items keep only their
	// fetched bit (Meta.Fetched), which costs nothing.
	AccessTimes bool
	// Now is the clock for TTLs, in seconds. nil means a cheap coarse Unix
	// clock (one atomic load; a ticker refreshes it every 100 ms). Tests
	// inject their own.
	Now func() uint32
	// AvgItemSize is the expected average key+value size in bytes. It
	// splits Memory between index and log: the index gets about two slots
	// (18.3 bytes) per expected item. Default 48. Items much smaller than
	// this fill the index before the log (cache mode then evicts early,
	// store mode runs out of memory early); much larger ones leave part of
	// the index unused.
	AvgItemSize int
}

// Index geometry.
const (
	bucketBytes    = 64
	bucketWords    = bucketBytes / 8
	slotsPerBucket = bucketWords - 1
	// One bucket in spareEvery is kept as a spare for overflow chains.
	spareEvery = 9
	// Target slots per item when the log is full, which keeps overflow
	// chains rare.
	slotsPerItem = 2
	// Largest item header: mark, key length, 5-byte uvarint value length,
	// flags, version, access time, expiry.
	maxHeader = 1 + 1 + 5 + 4 + 8 + 4 + 4
	// Offsets keep 48 bits; a log capacity under 2^46 leaves the sweep room
	// to clear dead slots before they could alias.
	maxLogCap = 1 << 46
)

// geometry is the layout of one partition.
type geometry struct {
	buckets   uint64 // all buckets: main, then spares
	main      uint64
	logCap    uint64
	overhang  uint64 // = maxRecord
	maxRecord uint64
	region    uint64 // bytes: index + logCap + overhang
}

// normalize fills in defaults and rejects nonsense.
func (c Config) normalize() (Config, error) {
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	if c.Memory == 0 {
		c.Memory = DefaultMemory
	}
	if c.MaxValue == 0 {
		c.MaxValue = DefaultMaxValue
	}
	if c.AvgItemSize == 0 {
		c.AvgItemSize = DefaultAvgItemSize
	}
	switch {
	case c.Partitions < 0 || c.Partitions > MaxPartitions:
		return c, fmt.Errorf("kv: Partitions %d out of range 1..%d", c.Partitions, MaxPartitions)
	case c.Memory < 0:
		return c, fmt.Errorf("kv: Memory %d is negative", c.Memory)
	case c.MaxValue < 0 || c.MaxValue > MaxMaxValue:
		return c, fmt.Errorf("kv: MaxValue %d out of range 1..%d (%s)", c.MaxValue, MaxMaxValue, bytesize.Format(MaxMaxValue))
	case c.AvgItemSize < 0:
		return c, fmt.Errorf("kv: AvgItemSize %d is negative", c.AvgItemSize)
	case c.Mode > ModeStore:
		return c, fmt.Errorf("kv: unknown Mode %d (want ModeCache or ModeStore)", c.Mode)
	}
	return c, nil
}

// indexShare is the fraction of memory given to the index: about two
// slots per item of AvgItemSize.
func (c Config) indexShare() float64 {
	idxPerItem := float64(slotsPerItem) * bucketBytes / slotsPerBucket
	logPerItem := float64(2 + uvarintLen(uint64(c.AvgItemSize)<<1) + uint64(c.AvgItemSize))
	if c.AccessTimes {
		logPerItem += 4
	}
	return idxPerItem / (idxPerItem + logPerItem)
}

// minPartition is the least memory a partition can have, found by
// bisection: its log must hold two maximum items, plus an overhang of one.
func (c Config) minPartition() uint64 {
	lo, hi := uint64(0), uint64(maxLogCap) // split(lo) fails, split(hi) works
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if _, ok := c.split(mid); ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// split lays out a partition of per bytes; ok is false when its log
// would not hold two maximum items.
func (c Config) split(per uint64) (g geometry, ok bool) {
	g.maxRecord = maxHeader + MaxKeyLen + uint64(c.MaxValue)
	g.overhang = g.maxRecord
	g.buckets = uint64(float64(per)*c.indexShare()) / bucketBytes
	g.buckets = min(max(g.buckets, spareEvery), math.MaxUint32)
	g.main = g.buckets - g.buckets/spareEvery
	idx := g.buckets * bucketBytes
	if per < idx+g.overhang+2*g.maxRecord {
		return g, false
	}
	g.logCap = per - idx - g.overhang
	g.region = idx + g.logCap + g.overhang
	return g, true
}

// Split is how Memory divides for this Config: the index and the log
// (with its overhang of one maximum item) summed over all partitions. It
// fails as New would on a Config that cannot be built.
func (c Config) Split() (index, log int64, err error) {
	c, err = c.normalize()
	if err != nil {
		return 0, 0, err
	}
	g, err := c.layout()
	if err != nil {
		return 0, 0, err
	}
	n := int64(c.Partitions)
	return n * int64(g.buckets*bucketBytes), n * int64(g.logCap+g.overhang), nil
}

// layout splits one partition's share of the budget into index and log.
func (c Config) layout() (geometry, error) {
	per := uint64(c.Memory) / uint64(c.Partitions)
	g, ok := c.split(per)
	switch {
	case ok && g.logCap > maxLogCap:
		return g, fmt.Errorf("kv: Memory %s gives each of %d partitions a log over %s; use more partitions",
			bytesize.Format(c.Memory), c.Partitions, bytesize.Format(maxLogCap))
	case !ok:
		return g, fmt.Errorf("kv: Memory %s too small: each of %d partitions gets %s, "+
			"but with MaxValue %s a partition needs at least %s (its log must hold two "+
			"maximum items); raise Memory or lower MaxValue or Partitions",
			bytesize.Format(c.Memory), c.Partitions, bytesize.Format(int64(per)), bytesize.Format(int64(c.MaxValue)),
			bytesize.Format(int64(c.minPartition())))
	case per > math.MaxInt:
		return g, fmt.Errorf("kv: Memory %s per partition does not fit this platform's address space", bytesize.Format(int64(per)))
	}
	return g, nil
}

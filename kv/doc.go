// Package kv is Jakiro's in-memory data structure: an EREW-partitioned
// key-value store in the style of MICA (Lim et al., NSDI 2014), with a lossy
// bucketed hash index in front of a circular log.
//
// The server owns the data; clients never see it. A Store is split into N
// partitions and every partition is touched by exactly one goroutine
// (exclusive read, exclusive write), so the hot path takes no locks and
// does no atomic operations. The caller hashes each key once with Hash,
// picks the partition with Store.PartitionOf and hands the same hash to the
// partition's Get, Put or Delete.
//
// # Layout
//
// Each partition owns one off-heap region (mmap on unix, see
// malloc_mmap.go; a pointer-free heap slice elsewhere), so the Go garbage
// collector never scans or counts the data, whatever the item count. The
// region holds:
//
//   - The index: 64-byte buckets, one cache line each. Word 0 links to an
//     overflow bucket taken from a per-partition pool of spare buckets;
//     words 1..7 are slots, each a 16-bit tag (from the key hash) and the
//     low 48 bits of the item's offset in the log. A zero slot is empty.
//   - The log: a circular arena of Capacity bytes plus an overhang as long
//     as the largest item, so every item is contiguous. Items are appended
//     at a 64-bit, ever-increasing tail; the head is the oldest byte still
//     intact. An item is
//     [flags u8][keylen u8][vallen 1..4 B][expiry u32 if TTL][key][value]:
//     3 bytes of header for a value under 256 bytes without a TTL.
//
// The hash bits are split so the choices are independent: bits 0..31 pick
// the bucket, bits 32..47 the partition, bits 48..63 the tag.
//
// # Correctness in cache mode
//
// A lookup never returns a wrong value: a slot whose offset falls before the
// log head points into overwritten space and is treated as empty, and a
// live slot is a hit only when the stored key bytes equal the key. Because
// slots keep 48 offset bits, a background-free sweep (a few buckets per
// megabyte appended) clears dead slots long before the 48-bit offsets could
// wrap around and alias live data.
//
// # Modes
//
// In ModeCache (the default) the log overwrites its oldest items when it
// wraps, and a Put into a bucket chain with no free slot and no spare
// bucket left evicts the chain's oldest item. With Config.ApproxLRU, a hit
// on an item in the oldest eighth of the log re-appends it at the tail, so
// items in use survive the wrap (approximate LRU).
//
// In ModeStore nothing is evicted: the log is cleaned instead, live items
// at the head are moved to the tail and dead ones reclaimed, and a Put that
// would take live data past the store limit (Capacity less one maximum item
// and 1/16 of Capacity, which bounds cleaning work) returns StatusNoMemory,
// as does a Put whose bucket chain is full with no spare bucket left.
//
// # Limits
//
// Keys are 1..MaxKeyLen (250) bytes and values 0..Config.MaxValue bytes
// (default 1 MiB), as memcached users expect; anything else is an error
// (StatusBadKey, StatusTooLarge), never a truncation.
package kv

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
// Each partition owns one off-heap region (an anonymous mmap on unix, 2 MiB
// aligned and advised to use transparent huge pages; a pointer-free heap
// slice elsewhere), so the Go garbage collector neither scans nor counts
// the data, whatever the item count. The region holds:
//
//   - The index: 64-byte buckets, one cache line each. Word 0 links to an
//     overflow bucket taken from a per-partition pool of spare buckets (one
//     bucket in nine); words 1..7 are slots, each a 16-bit tag from the key
//     hash and the low 48 bits of the item's offset in the log. A zero slot
//     is empty.
//   - The log: an arena of Capacity bytes used as a circular buffer, plus an
//     overhang as long as the largest item, so every item is contiguous.
//     Items are appended at a 64-bit, ever-increasing tail; the head is the
//     oldest byte still intact. An item is
//     [mark u8][keylen u8][uvarint vallen<<1|ttl][flags u32, version u64,
//     access time u32, if marked][expiry u32, if ttl][key][value]: 3 bytes
//     of header for a value under 64 bytes without a TTL, client flags, a
//     carried version or an access time (Config.AccessTimes). The mark byte
//     also holds memcached's "fetched" bit, set by an item's first read.
//
// Memory is split between index and log by Config.AvgItemSize: about two
// slots per expected item. With the defaults, 10 M items of 16-byte keys
// and 32-byte values fit in 70 bytes each, index and log included.
//
// The hash bits are split so the choices are independent: bits 0..31 pick
// the bucket, bits 32..47 the partition, bits 48..63 the tag.
//
// # Never a wrong value
//
// A slot whose offset falls before the log head points into overwritten
// space and counts as empty, and a live slot is a hit only when the stored
// key bytes equal the key. Slots keep 48 offset bits; a sweep, which
// compacts one bucket chain per few kilobytes appended, clears dead slots
// long before 2^48 bytes pass and their offsets could alias live data.
//
// # Modes
//
// In ModeCache (the default) the log overwrites its oldest items when it
// wraps, and a Put into a bucket chain with no free slot and no spare
// bucket left evicts the chain's oldest item. With Config.ApproxLRU, a hit
// on an item in the oldest eighth of the log re-appends it at the tail, so
// items read more often than once per eighth of a log rotation survive the
// wrap (approximate LRU).
//
// In ModeStore nothing is evicted: the log is cleaned instead (live items
// at the head are moved to the tail, dead ones reclaimed), and a Put that
// would take the live bytes past Capacity less one maximum item and 1/16 of
// Capacity (the slack bounds the cleaning work) returns StatusNoMemory, as
// does a Put whose bucket chain is full with no spare bucket left. A
// refused Put leaves the previous value in place.
//
// # Cache-mode Put
//
// Touching the item a Put supersedes costs a cache miss on a random line,
// as much as the index lookup itself. So in cache mode, when exactly one
// live slot of the chain has the key's tag, Put takes it as the key's
// without reading the item (no duplicate can arise: the key, if present,
// is in that slot). The superseded item is prefetched and settled 16 Puts
// later, by then in the cache: marked gone, its bytes uncounted and, in the
// rare case that it was another key with the same tag (about once in
// 65536/load Puts of a new key), given a slot back. Until then that other
// key misses, as if evicted for a moment. Delete and Stats settle first.
//
// # Commands and versions
//
// Beside Get, Put and Delete a partition runs memcached's commands
// (commands.go): Store (set, add, replace, append, prepend, each with an
// optional compare-and-swap), Incr, Touch, Retime, GetAndTouch, GetItem,
// PeekItem, Flush, memcached's serve-stale pair Invalidate and SetRecache
// (recache.go), and SetVersion (version.go). Each is one owner's single-key
// operation, so each is exact without locks, and none allocates (Append,
// Prepend, Touch, Invalidate and SetVersion use a buffer of MaxValue bytes
// the partition allocates once). Every item has a Meta: 32 client flags
// and a 64-bit Version that changes with every write and never repeats in
// the partition: the item's log offset plus one, stored only when the item
// moves without a write (LRU, store-mode cleaning, touch), so plain items
// pay no bytes for it; or one a client chose (SetVersion, memcached's E
// flag), which it may repeat.
//
// # Access history
//
// Every read (Get, GetItem, GetAndTouch, Touch; not PeekItem) sets the
// item's fetched bit, in the mark byte the read decodes anyway, and, with
// Config.AccessTimes, its last access time (4 bytes an item, written only
// when it changed, at most once a second per item); a write starts a new
// item, not fetched, accessed now. Meta reports both as they were before
// the command (memcached's meta get h and l flags), and moves keep them,
// as they keep the stale mark and win token of memcached's serve-stale
// (Invalidate, SetRecache: two more bits of the mark byte).
//
// # Limits
//
// Keys are 1..MaxKeyLen (250) bytes and values 0..Config.MaxValue bytes
// (default 1 MiB), as memcached users expect; anything else is an error
// (StatusBadKey, StatusTooLarge), never a truncation. TTLs are relative
// seconds on Config.Now; the memcached convention that an exptime over 30
// days is an absolute Unix time belongs to the protocol layer (Store.Now
// gives it the clock).
//
// # Batching
//
// Get, Put and Delete each wait for two or three cache misses. A server
// with several requests at hand can call Prefetch for all of them, then
// PrefetchItem, then serve them, so the misses overlap; on a 1 M-item
// partition this makes Gets several times faster.
package kv

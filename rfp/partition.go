package rfp

import "github.com/cespare/xxhash/v2"

// KeyHash is the hash both sides compute for a key (xxhash64); the server
// recomputes it, it never trusts the client's choice of partition.
func KeyHash(key []byte) uint64 { return xxhash.Sum64(key) }

// PartitionOf picks the partition of a key hash among n: bits 32..47 by
// multiply-shift, the same bits the server's store uses, so that the ring a
// client writes to belongs to the goroutine that owns the key.
func PartitionOf(hash uint64, n int) int {
	return int((hash >> 32 & 0xffff) * uint64(n) >> 16)
}

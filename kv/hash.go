package kv

import "github.com/cespare/xxhash/v2"

// Hash is the xxhash64 of key. Callers hash a key once and pass the result
// to Store.PartitionOf and to the partition's Get, Put and Delete; passing
// anything but Hash(key) makes the key unreachable.
//
// Bit use: 0..31 choose the bucket in a partition, 32..47 the partition,
// 48..63 the tag kept in the index slot.
func Hash(key []byte) uint64 { return xxhash.Sum64(key) }

const (
	tagShift = 48
	offMask  = 1<<48 - 1
)

// tagOf returns the 16-bit tag of a hash, never 0 (0 marks an empty slot).
func tagOf(h uint64) uint64 {
	t := h >> tagShift
	if t == 0 {
		t = 1
	}
	return t
}

// partitionOf maps bits 32..47 of the hash onto [0, n) by multiply-shift.
func partitionOf(h uint64, n int) int {
	return int((h >> 32 & 0xffff) * uint64(n) >> 16)
}

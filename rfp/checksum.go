package rfp

import "github.com/cespare/xxhash/v2"

// checksum is the slot checksum: xxhash64 folded to 32 bits. It is a torn
// write detector, not a MAC.
func checksum(b []byte) uint32 {
	h := xxhash.Sum64(b)
	return uint32(h) ^ uint32(h>>32)
}

//go:build !unix || kv_heap

package kv

import (
	"fmt"
	"unsafe"
)

// allocRegion returns n zeroed bytes from the Go heap, for platforms
// without mmap (and for tests, with -tags kv_heap). The slice holds no
// pointers, so the GC does not scan it, though it does count it against
// GOGC. It is allocated as []uint64 so the index words are aligned.
func allocRegion(n int) (mem []byte, free func() error, err error) {
	if n <= 0 {
		return nil, nil, fmt.Errorf("kv: region of %d bytes", n)
	}
	words := make([]uint64, (n+7)/8)
	mem = unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n)
	return mem, func() error { return nil }, nil
}

// zero clears b, a part of a region.
func zero(b []byte) { clear(b) }

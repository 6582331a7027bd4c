//go:build unix && !kv_heap

package kv

import (
	"fmt"
	"unsafe"

	"github.com/jakiro-kv/jakiro/internal/bytesize"
	"golang.org/x/sys/unix"
)

const hugePage = 2 << 20

// allocRegion returns n zeroed bytes outside the Go heap: an anonymous
// private mapping, so the GC neither scans nor counts it. Pages are
// committed on first touch, by the partition's owner goroutine. Regions of
// at least 2 MiB are aligned to 2 MiB and advised to use transparent huge
// pages, which keeps TLB misses down when the index and log are many GiB.
// free unmaps the region; it must not be used afterwards.
func allocRegion(n int) (mem []byte, free func() error, err error) {
	if n <= 0 {
		return nil, nil, fmt.Errorf("kv: region of %d bytes", n)
	}
	page := unix.Getpagesize()
	size := (n + page - 1) / page * page
	huge := n >= hugePage
	if huge {
		size += hugePage
	}
	m, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, nil, fmt.Errorf("kv: mmap %s: %w", bytesize.Format(int64(size)), err)
	}
	start := 0
	if huge {
		addr := uintptr(unsafe.Pointer(&m[0]))
		start = int((hugePage - addr%hugePage) % hugePage)
	}
	mem = m[start : start+n : start+n]
	if huge {
		_ = unix.Madvise(mem[:n/hugePage*hugePage], unix.MADV_HUGEPAGE) // best effort
	}
	return mem, func() error { return unix.Munmap(m) }, nil
}

// zero clears b, a part of a region: whole pages are handed back to the
// kernel (MADV_DONTNEED: they read as zeros and cost nothing until touched
// again), so clearing a large index neither takes long nor commits it.
func zero(b []byte) {
	page := uintptr(unix.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (start + page - 1) &^ (page - 1)
	hi := (start + uintptr(len(b))) &^ (page - 1)
	if hi <= lo {
		clear(b)
		return
	}
	clear(b[:lo-start])
	clear(b[hi-start:])
	if err := unix.Madvise(b[lo-start:hi-start], unix.MADV_DONTNEED); err != nil {
		clear(b[lo-start : hi-start])
	}
}

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

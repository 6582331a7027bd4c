//go:build amd64 || arm64

package kv

// prefetch hints the CPU to bring the cache line at addr into the cache.
// It never faults and has no effect on the program's semantics.
func prefetch(addr uintptr)

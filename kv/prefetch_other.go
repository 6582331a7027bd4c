//go:build !amd64 && !arm64

package kv

func prefetch(addr uintptr) {}

//go:build unix

package kv

import "golang.org/x/sys/unix"

// threadTime is the calling thread's CPU time in nanoseconds; the caller
// locks itself to its OS thread.
func threadTime() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

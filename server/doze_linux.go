package server

import (
	"time"

	"golang.org/x/sys/unix"
)

// lowerTimerSlack makes this thread's short sleeps short: Linux pads them
// by 50µs by default, which would break the wake-up bound.
func lowerTimerSlack() {
	// PR_SET_TIMERSLACK applies to the calling thread; the goroutine may
	// move, so doze sets it again cheaply when it matters (see doze).
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0)
}

// doze sleeps about d on this thread with nanosleep, bypassing the Go
// timer wheel (whose wake-ups are coarser).
func doze(d time.Duration) {
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0)
	ts := unix.NsecToTimespec(int64(d))
	_ = unix.Nanosleep(&ts, nil)
}

package server

import (
	"time"

	"golang.org/x/sys/unix"
)

// lowerTimerSlack makes this thread's short sleeps short: Linux pads them
// by 50µs by default, which would break the wake-up bound of dozing.
func lowerTimerSlack() {
	// PR_SET_TIMERSLACK applies to the calling thread; the goroutine may
	// move, so doze sets it again cheaply when it matters.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0)
}

// doze sleeps about d on this thread with nanosleep, bypassing the Go
// timer wheel (whose wake-ups are coarser): the idle poll of fabrics
// without doorbells.
func doze(d time.Duration) {
	lowerTimerSlack()
	ts := unix.NsecToTimespec(int64(d))
	_ = unix.Nanosleep(&ts, nil)
}

// yieldCore offers this thread's core to any other runnable thread of the
// machine (runtime.Gosched only yields to goroutines): an idle partition
// must not keep a core from its clients when they share the machine.
func yieldCore() { _, _, _ = unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

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
//
// keepP yields without telling the runtime, so the partition keeps its P
// while its thread waits for the core: told (a system call), a yield that
// lost the core for over 20 µs had the runtime's monitor take the P back
// and hand it to another thread, and kept the monitor waking every 20 µs;
// the partition then came back on yet another thread. A loop of joins on 2
// vCPUs, 3 alternated pairs: server CPU per join 395-575 -> 265-340 µs,
// context switches 5.1-7.7 -> 3.6-4.2, join p50 330-422 -> 237-292 µs.
// Where partitions hold every P, and on tcp, whose fabric reads sockets in
// goroutines, the runtime is told, so that the server's other goroutines
// get a P while a partition's thread is off the core (partition.go).
func yieldCore(keepP bool) {
	if keepP {
		_, _, _ = unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		return
	}
	_, _, _ = unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
}

package main

import (
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// selfCPU is this process's CPU time so far, user and system, every
// thread.
func selfCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clockTick is the unit of /proc/PID/stat's times (USER_HZ: 100 on Linux).
const clockTick = 10 * time.Millisecond

// procCPU is process pid's CPU time so far, user and system, every
// thread (from /proc/PID/stat, in clock ticks).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name may hold spaces: fields count from after its ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	// After ')': state is field 3 of the whole line, utime 14, stime 15.
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * clockTick
}

// procCPUPrecise is process pid's CPU time so far, in nanoseconds: the
// sum over its threads of /proc/PID/task/TID/schedstat's first field (time
// on a CPU), where procCPU counts 10 ms ticks. A thread that has exited
// takes its time with it (Go's threads live as long as the process). It
// falls back to procCPU where schedstat is missing.
func procCPUPrecise(pid int) time.Duration {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil || len(tasks) == 0 {
		return procCPU(pid)
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			if os.IsNotExist(err) {
				continue // exited meanwhile
			}
			return procCPU(pid)
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return procCPU(pid)
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return procCPU(pid)
		}
		sum += ns
	}
	return time.Duration(sum)
}

// Package parkfd puts a descriptor (an epoll instance) in the Go runtime's
// poller, so that a goroutine waiting for it to be readable parks there
// (syscall.RawConn.Read) instead of holding a P in a blocking system call:
// the runtime's monitor takes such a P back after 20 µs and then looks
// every 20 µs for as long as takes keep coming.
package parkfd

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Open makes fd non-blocking and wraps it in a file the runtime's poller
// watches. From then on the file owns fd (drop it and its finalizer closes
// fd). The RawConn is nil where the poller cannot take fd; the file is nil
// only where fd could not be made non-blocking, and fd is then still the
// caller's.
func Open(fd int, name string) (*os.File, syscall.RawConn) {
	if unix.SetNonblock(fd, true) != nil {
		return nil, nil
	}
	f := os.NewFile(uintptr(fd), name)
	rc, err := f.SyscallConn()
	if err != nil || f.SetReadDeadline(time.Time{}) != nil { // no deadline: not in the poller
		return f, nil
	}
	return f, rc
}

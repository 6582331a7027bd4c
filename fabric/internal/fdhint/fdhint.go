// Package fdhint turns "too many open files" into what to do about it:
// a process out of descriptors fails in places that do not say so (a
// unix socket drops the fds of a message and flags it truncated), and the
// fix is the operator's, not the peer's.
package fdhint

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// ErrTooManyFiles is wrapped by Explain's errors.
var ErrTooManyFiles = errors.New("too many open files")

// limit is the process's soft RLIMIT_NOFILE, 0 if unknown.
func limit() uint64 {
	var l unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &l) != nil {
		return 0
	}
	return l.Cur
}

// tooMany says what to do; cause (if any) follows.
func tooMany(cause error) error {
	fix := "raise ulimit -n"
	if n := limit(); n > 0 {
		fix = fmt.Sprintf("the process's limit is %d, or the system's: raise ulimit -n", n)
	}
	if cause == nil {
		return fmt.Errorf("%w (%s)", ErrTooManyFiles, fix)
	}
	return fmt.Errorf("%w (%s): %v", ErrTooManyFiles, fix, cause)
}

// Explain returns err with the fix when it is EMFILE or ENFILE, else err.
func Explain(err error) error {
	if err == nil || errors.Is(err, ErrTooManyFiles) {
		return err
	}
	if errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) {
		return tooMany(err)
	}
	return err
}

// AtLimit reports whether the process cannot open one more descriptor
// now: the cause of a message whose fds the kernel dropped (MSG_CTRUNC).
func AtLimit() error {
	fd, err := unix.FcntlInt(0, unix.F_DUPFD_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
		return nil
	}
	if err == unix.EMFILE || err == unix.ENFILE {
		return tooMany(nil)
	}
	return nil
}

// Package fdlimit raises the process's open-file limit, for binaries that
// hold a file descriptor or more per client connection (a shm connection
// holds its socket, its domain memfd and, on the dialing side, the
// listener's doorbells).
package fdlimit

import "golang.org/x/sys/unix"

// Raise sets RLIMIT_NOFILE's soft limit to want, raising the hard limit
// too where the process may (root, CAP_SYS_RESOURCE), else to the hard
// limit. It returns the soft limit in force afterwards.
func Raise(want uint64) (uint64, error) {
	var l unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &l); err != nil {
		return 0, err
	}
	if l.Cur >= want {
		return l.Cur, nil
	}
	if l.Max < want {
		up := unix.Rlimit{Cur: want, Max: want}
		if unix.Setrlimit(unix.RLIMIT_NOFILE, &up) == nil {
			return want, nil
		}
	}
	l.Cur = min(want, l.Max)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &l); err != nil {
		return 0, err
	}
	return l.Cur, nil
}

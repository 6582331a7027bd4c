package parkfd

import (
	"errors"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestParksUntilDeadline: an epoll instance with nothing ready parks its
// reader until the file's deadline.
func TestParksUntilDeadline(t *testing.T) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	f, rc := Open(fd, "test epoll")
	if f == nil || rc == nil {
		t.Fatalf("an epoll instance not in the runtime's poller: %v %v", f, rc)
	}
	defer f.Close()
	f.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
	looks := 0
	start := time.Now()
	err = rc.Read(func(uintptr) bool { looks++; return false })
	if !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) < 5*time.Millisecond {
		t.Fatalf("Read = %v after %v, want the deadline after 5ms", err, time.Since(start))
	}
	if looks == 0 {
		t.Fatal("Read parked without looking first")
	}
}

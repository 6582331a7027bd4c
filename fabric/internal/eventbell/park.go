package eventbell

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jakiro-kv/jakiro/fabric/internal/parkfd"
)

// parking is how a bell's long waits park in the runtime's poller rather
// than hold a P in ppoll. A goroutine in a system call keeps its P until
// the runtime's monitor takes it back, and every take sets the monitor
// looking every 20 µs, for good while they keep coming: a partition that
// fell asleep between the joins of a loop of clients (each well under a
// millisecond apart) kept it so, 13% of the server's CPU on 2 cores.
//
// The eventfd waits in an epoll instance of its own, which the runtime's
// poller watches, and only while a wait is parked: in the runtime's
// poller itself, every ring during a doze (ppoll) would also wake the
// thread that waits in that poller for nothing.
type parking struct {
	ep     *os.File // the bell's epoll instance
	rc     syscall.RawConn
	try    func(uintptr) bool // made once: a closure per wait is an allocation
	events [1]unix.EpollEvent
}

// parkFrom: waits at least this long park. Shorter ones (a crowded
// partition's doze, 50 µs) ppoll: the runtime's poller sleeps whole
// milliseconds, and with a doze in a system call the runtime does not
// know of (keeping its P) many callers on 2 cores read 10-25% slower
// (jakiro-bench callers, 11 interleaved rounds).
const parkFrom = time.Millisecond

// newParking makes bell fd's epoll instance, registered in the runtime's
// poller; nil where that fails (its waits then use ppoll).
func newParking(fd int) *parking {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	f, rc := parkfd.Open(epfd, "eventbell epoll")
	if rc == nil {
		if f != nil {
			f.Close()
		} else {
			unix.Close(epfd)
		}
		return nil
	}
	pk := &parking{ep: f, rc: rc}
	pk.try = func(ep uintptr) bool {
		n, err := unix.EpollWait(int(ep), pk.events[:], 0)
		return n > 0 || err != nil && err != unix.EINTR
	}
	return pk
}

// wait is WaitBell's wait for bell i, parked (its flag is raised). With
// GOMAXPROCS 1 WaitBell uses ppoll instead: a spinner holding the only P
// would keep the poller from running but for the monitor's look, every
// 10 ms.
func (pk *parking) wait(b *Set, i int, d time.Duration) (bool, error) {
	fd := b.fds[i]
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
	if err := pk.ctl(unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		if b.closed.Load() {
			return false, fmt.Errorf("fabric: wait doorbell: %w", err)
		}
		return b.ppoll(i, d) // a wait all the same
	}
	defer pk.ctl(unix.EPOLL_CTL_DEL, fd, nil)
	if err := pk.ep.SetReadDeadline(time.Now().Add(d)); err != nil {
		return false, fmt.Errorf("fabric: wait doorbell: %w", err)
	}
	// The thread that wakes us is the one that waited in the runtime's
	// poller, and nothing sends another there while we spin: an idle P's
	// thread sleeps on until the monitor looks (up to 10 ms), and a
	// connection arriving meanwhile waits (a listener's accept was 0.5-0.7
	// ms late in the slowest 2% of a loop of joins). Gosched wakes an idle
	// P's thread, which, finding nothing to run, waits in the poller.
	defer runtime.Gosched()
	for {
		err := pk.rc.Read(pk.try)
		timeout := errors.Is(err, os.ErrDeadlineExceeded)
		if err != nil && !timeout {
			// Closed: fd may be closed too, and its number another's.
			return false, fmt.Errorf("fabric: wait doorbell: %w", err)
		}
		var buf [8]byte
		unix.Read(fd, buf[:]) // drain; the counter counts
		if b.look(i) {
			return true, nil
		}
		if timeout {
			return false, nil
		}
		// A write left by a ring already counted woke us for nothing.
	}
}

// ctl is epoll_ctl(2) on the bell's instance, while its file holds it
// open: after Close its number may be another's.
func (pk *parking) ctl(op, fd int, ev *unix.EpollEvent) error {
	var err error
	if cerr := pk.rc.Control(func(ep uintptr) { err = unix.EpollCtl(int(ep), op, fd, ev) }); cerr != nil {
		return cerr
	}
	return err
}

func (pk *parking) close() {
	if pk != nil {
		pk.ep.Close()
	}
}

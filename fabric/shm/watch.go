package shm

import (
	"errors"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// sockets watches the sockets of the process's shm connections, which
// carry nothing after the handshake: their end (EOF, an error) is the
// peer closing or dying, or Close shutting the socket down. One goroutine
// waits on an epoll set of all of them, so a connection starts no
// goroutine of its own: on a small virtual machine a goroutine's start
// wakes a thread for an idle P (a futex and an IPI), about 10 µs of a
// join's critical path and more of its CPU. The set's own fd waits in the
// Go runtime's poller like any socket (a goroutine blocked in epoll_wait
// would hold a thread in a system call, and each return would need a P
// taken back from it). A connection the watcher cannot take (no epoll:
// out of fds) gets a goroutine of its own, as before (conn.watch).
var sockets sockWatch

type sockWatch struct {
	once sync.Once
	epfd int      // -1 if epoll could not be had
	file *os.File // epfd, in the runtime's poller

	mu    sync.Mutex
	conns map[int32]*conn // by socket fd, while registered
}

// start makes the epoll set and its goroutine, once per process.
func (w *sockWatch) start() {
	w.once.Do(func() {
		w.epfd = -1
		fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			return
		}
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(fd)
			return
		}
		f := os.NewFile(uintptr(fd), "shm-sockets") // non-blocking: the poller waits for it
		rc, err := f.SyscallConn()
		if err != nil {
			f.Close()
			return
		}
		w.epfd, w.file, w.conns = fd, f, map[int32]*conn{}
		go w.loop(rc)
	})
}

// add watches c's socket; false if it cannot (c then watches itself).
func (w *sockWatch) add(c *conn) bool {
	w.start()
	rc, err := c.sock.SyscallConn()
	if err != nil {
		return false
	}
	fd := -1
	rc.Control(func(s uintptr) { fd = int(s) })
	if fd < 0 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.epfd < 0 {
		return false
	}
	// Registered under the lock, so the loop finds c for any event.
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(fd)}
	if err := unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return false
	}
	w.conns[int32(fd)] = c
	return true
}

func (w *sockWatch) loop(rc syscall.RawConn) {
	epfd := w.epfd
	evs := make([]unix.EpollEvent, 64)
	for {
		var n int
		var err error
		rerr := rc.Read(func(uintptr) bool {
			n, err = unix.EpollWait(epfd, evs, 0)
			return n > 0 || err != nil && !errors.Is(err, unix.EINTR)
		})
		if err == nil {
			err = rerr
		}
		if err != nil {
			w.fail(err)
			return
		}
		for i := 0; i < n; i++ {
			fd := evs[i].Fd
			w.mu.Lock()
			c := w.conns[fd]
			w.mu.Unlock()
			if c == nil || !ended(int(fd)) {
				continue
			}
			// Out of the set before the socket is closed, so its number,
			// reused, is never taken for c's.
			w.mu.Lock()
			delete(w.conns, fd)
			unix.EpollCtl(epfd, unix.EPOLL_CTL_DEL, int(fd), nil)
			w.mu.Unlock()
			c.watchEnd()
		}
	}
}

// fail hands every watched connection a goroutine of its own: epoll_wait
// failed, which it does not for a valid set.
func (w *sockWatch) fail(error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for fd, c := range w.conns {
		unix.EpollCtl(w.epfd, unix.EPOLL_CTL_DEL, int(fd), nil)
		go c.watch()
	}
	w.conns = map[int32]*conn{}
	w.epfd = -1 // later connections watch themselves
}

// ended reads what a socket holds (a peer may write anything; it is
// dropped) and reports whether it has ended: EOF or an error.
func ended(fd int) bool {
	var b [64]byte
	for {
		n, _, err := unix.Recvfrom(fd, b[:], unix.MSG_DONTWAIT)
		switch {
		case errors.Is(err, unix.EAGAIN):
			return false
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil || n == 0:
			return true
		}
	}
}

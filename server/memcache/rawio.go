package memcache

import (
	"net"
	"syscall"
	"unsafe"
)

// rawIO reads and writes a connection's socket with raw system calls,
// through its syscall.RawConn: Go's netpoller still does the waiting, and
// the deadlines hold. net.Conn's Read and Write enter the runtime's
// syscall state, which wakes its monitor thread (sysmon) whenever every P
// was idle, as a door waiting on its clients keeps them: that thread's
// wake-ups then cost about as much as the door's own work (a CPU profile
// of a door serving 4 connections: sysmon and its wake-ups 15%, the
// door's commands 5%). A read or write of a non-blocking socket does not
// block, so it needs no P hand-off either.
type rawIO struct {
	rc      syscall.RawConn
	p       []byte
	n       int
	err     error
	readFn  func(fd uintptr) bool
	writeFn func(fd uintptr) bool
}

// newRawIO returns the raw reader and writer of nc, or nil where nc has
// no file descriptor (the tests' fake connections).
func newRawIO(nc net.Conn) *rawIO {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	r := &rawIO{rc: rc}
	r.readFn, r.writeFn = r.read, r.write // bound once: no allocation per call
	return r
}

func (r *rawIO) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.p, r.n, r.err = p, 0, nil
	err := r.rc.Read(r.readFn) // waits while read says so; deadline, close
	r.p = nil
	if err != nil {
		return 0, err
	}
	return r.n, r.err
}

// read is called by the RawConn's Read: false to wait for readability.
func (r *rawIO) read(fd uintptr) bool {
	r.n, r.err = sysRead(fd, r.p)
	return r.err != errWouldBlock
}

func (r *rawIO) Write(p []byte) (int, error) {
	r.p, r.n, r.err = p, 0, nil
	err := r.rc.Write(r.writeFn)
	n := r.n
	r.p = nil
	if err == nil {
		err = r.err
	}
	return n, err
}

// write is called by the RawConn's Write: false to wait for room.
func (r *rawIO) write(fd uintptr) bool {
	for r.n < len(r.p) {
		n, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&r.p[r.n])), uintptr(len(r.p)-r.n), 0, 0, 0)
		switch e {
		case 0:
			r.n += int(n)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			r.err = e
			return true
		}
	}
	return true
}

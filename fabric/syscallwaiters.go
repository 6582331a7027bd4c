package fabric

// SyscallWaiters is implemented by listeners whose provider runs
// goroutines that wait in blocking system calls (tcp's pollers, in
// epoll_wait at GOMAXPROCS 1; parked otherwise, they still want a P at
// once when woken). Such a goroutine keeps its P while it waits, until the
// runtime's monitor takes it back (20 µs to 10 ms later), so a process
// whose other Ps spin (a server's partitions) has none left meanwhile for
// its other goroutines: the accept loop, a handshake, a poller returning
// with events. A server process sizes its Ps with it.
type SyscallWaiters interface {
	SyscallWaiters() int
}

// SyscallWaitersOf is l's SyscallWaiters, 0 where it has none.
func SyscallWaitersOf(l Listener) int {
	if w, ok := l.(SyscallWaiters); ok {
		return w.SyscallWaiters()
	}
	return 0
}

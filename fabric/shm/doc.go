// Package shm is the shared-memory fabric provider: cross-process,
// truly one-sided, on one Linux host. Import it for its side effect; it
// registers the "shm" URL scheme:
//
//	shm:///path/to/socket            listener socket, mode 0600
//	shm:///path/to/socket?mode=0660  other socket file mode
//
// # Domains
//
// Each side of each connection owns a protection domain: a sealed memfd
// (F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_SEAL) of Options.DomainSize bytes plus
// a table page, sparse, that holds exactly the regions it grants that one
// peer. The handshake passes the two memfds over the unix socket
// (SOCK_SEQPACKET, SCM_RIGHTS) along with the private data; each side maps
// the other's. A peer therefore can map nothing but what was allocated for
// it: regions of other connections live in other memfds. An acceptor
// addresses at most its own Options.DomainSize of a dialer's region area
// and maps no more of it (a dialer region beyond that completes with
// fabric.ErrRemoteAccess), so a connection costs an acceptor twice its own
// DomainSize of address space, whatever the dialer's (at most
// MaxDialerDomain).
//
// A listener with Options.Ready keeps that many of its own domains made,
// sealed and mapped before anyone dials (ready.go), refilled by one
// goroutine that waits while the pool is full, so a join does not wait
// for them. Each is a fresh memfd given to one connection and never back:
// nothing written by one client reaches another. Each comes with one to
// lend: a dialer with Options.BorrowDomain (every rfp client) makes no
// domain of its own, sends a hello without an fd, and gets the one made
// for it beside the acceptor's in the accept; the listener maps it as it
// would the dialer's, and the dialer checks it as it checks a peer's
// (seals, size, header) before it maps it. Its join then makes no memory
// on either side: one exchange on the socket, and the mappings.
//
// A join is one round trip: the dialer makes its domain before it
// connects and sends its hello right after, so the listener, woken by the
// connect, finds the hello there and answers it on its accept loop
// (calling Options.OnHello first, so the application wakes what the
// client will use meanwhile); the dialer polls for the accept for up to
// acceptSpin (200 µs), as being woken costs more. The dialer's socket
// stays out of the Go runtime's poller (a blocking descriptor it polls
// itself, within its context): the poller would wake an idle thread at
// the connect and at the accept with nothing to do, and on 2 cores that
// thread takes the core the listener's handshake needs (join p50 about
// halved). An accept slower than acceptSpin (a busy listener) is waited
// for in the poller all the same, through a duplicate of the socket
// registered for that wait alone: a thread blocked in a system call
// keeps the runtime's sysmon waking, and a burst of dialers waiting so
// starves the listener (wire.go, waitReadable).
//
// # One-sided operations
//
// READ and WRITE are memory copies done by the initiator inside Post,
// between its region and its mapping of the peer's domain; the target's
// CPU takes no part. Access validation also happens at the initiator: the
// owner of a domain records each registered region {key, offset, length}
// in the domain's table, and the initiator looks the Desc's key up there
// and checks the range lies inside that region, else the operation
// completes with fabric.ErrRemoteAccess. The table is peer-written memory
// and is treated as untrusted input: every entry is bounds-checked against
// what is mapped of the domain, and the received memfd's seals are verified before it
// is mapped, so a peer can neither make us fault (it cannot shrink its
// file) nor reach beyond its own domain.
//
// Completions are queued in a fixed ring, delivered in posting order by
// Poll. Post and Poll do not allocate. The socket carries nothing after
// the handshake: the process's one epoll set of its connections' sockets
// (watch.go; a goroutine waiting on it in the runtime's poller, none per
// connection) sees EOF when the peer closes or dies; the connection then
// reports fabric.ErrPeerGone. Close unmaps both domains.
//
// # Doorbells
//
// A listener with Options.Doorbells sends each dialer, with its accept, a
// page of ring counters (mapped read-write), a page of asleep flags (a
// read-only fd: mapped read-only) and an eventfd per bell. A ring is an
// atomic add to its counter, plus an eventfd write only when the flag says
// the partition is blocked (fabric/internal/eventbell): rings to a busy
// server cost no system call. BellBlocked (fabric.BellWatcher) reads the
// flag. A dialer can spoil only counts (spurious rings, which cost the
// server a look, as eventfd writes would), never hide a blocked partition
// from the other dialers.
//
// Memory ordering: copies are plain memmove; the ordering contract of
// package fabric (torn views possible) applies.
package shm

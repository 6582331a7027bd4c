// Package tcp is the fabric provider for hosts without RDMA: one-sided
// READ and WRITE carried over one TCP connection, with software playing
// the NIC. URLs look like tcp://host:port; importing the package registers
// the "tcp" scheme.
//
// # Contract
//
//   - Handshake: Dial only connects. The dialer's Setup.Establish sends a
//     hello (magic, protocol version, queue depth, at most
//     fabric.MaxDialData bytes of private data); the acceptor's
//     Listener.Accept returns a Setup whose PeerData is that data. The
//     acceptor's Establish answers with at most fabric.MaxAcceptData bytes;
//     its Setup.Close answers with a rejection, which the dialer's Establish
//     reports as fabric.ErrRejected. A peer that does not speak this
//     protocol (wrong magic or version) gets a readable error on both sides
//     and never reaches Accept.
//   - Regions are anonymous mmap memory, off the Go heap. Each has a random
//     nonzero 32-bit key, unique in its connection's domain; Desc.Addr is
//     a virtual offset in that domain, never 0. Only the peer of that
//     connection can reach a region, and only with its key.
//   - One-sided: each side runs a NIC (a reader goroutine, which answers
//     itself when the socket takes the answer at once, and a sender
//     goroutine for the rest) that serves the peer's READ and WRITE
//     requests straight against the registered memory; the application
//     goroutines of the target take no part. A request with an unknown key, or a range that
//     leaves its region, completes at the initiator with
//     fabric.ErrRemoteAccess; the connection stays usable.
//   - Initiator: Post checks every op locally (fabric.ErrLocalAccess,
//     fabric.ErrQueueFull; then nothing is posted), encodes the batch and
//     flushes it with one write (the doorbell). Completions arrive in
//     posting order; READ data is in the local region when its completion
//     is polled. Post and Poll do not allocate.
//   - Everything read from the socket is untrusted: lengths are bounded
//     (MaxOpLen) before use, unknown frames end the connection with a
//     protocol error, nothing panics.
//   - Threads: after the handshake the socket leaves Go's netpoller and
//     the reader blocks in read(2), one thread per connection. Initiators
//     busy-poll Poll on every P; a netpoll wakeup would wait for a free P
//     (up to sysmon's 10ms), a returning syscall re-enters through the
//     run queue at the poller's next Gosched. And since that thread
//     shares the cores with the pollers, Poll calls sched_yield(2) after
//     every yieldEvery empty polls while ops are outstanding.
//   - Failure: a closed socket, a reset, or a host that vanished (TCP
//     keepalive and TCP_USER_TIMEOUT: within about UserTimeout) ends the
//     connection: Done is closed, Err wraps fabric.ErrPeerGone,
//     outstanding ops complete with fabric.ErrPeerGone, then Post and Poll
//     return the error. After a local Close they complete with
//     fabric.ErrClosed instead. Close first acknowledges the requests its
//     NIC already applied (at most for closeFlushTimeout), is idempotent,
//     and unmaps the regions only once the NIC goroutines have stopped.
//
// # Wire
//
// After the handshake both directions carry the same frames: requests
// (READ, WRITE + payload) from that side's initiator and responses (status,
// READ payload) from that side's NIC, in order. Responses carry no id: the
// peer serves requests in order, so the initiator matches them FIFO.
package tcp

// Package tcp is the fabric provider for hosts without RDMA: one-sided
// READ and WRITE carried over one TCP connection, with software playing
// the NIC. URLs look like tcp://host:port; importing the package registers
// the "tcp" scheme.
//
// # Contract
//
//   - Handshake: Dial only connects. The dialer's Setup.Establish sends a
//     hello (magic, protocol version, queue depth, at most
//     fabric.MaxDialData bytes of private data) and waits for the answer
//     on its own thread, in blocking syscalls bounded by the socket's
//     timeouts (dialsock.go): the answer wakes the thread that waits, with
//     no netpoller hand-off between; the acceptor's
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
//   - One-sided: each side runs a NIC that serves the peer's READ and
//     WRITE requests straight against the registered memory; the
//     application goroutines of the target take no part. A request with
//     an unknown key, or a range that leaves its region, completes at the
//     initiator with fabric.ErrRemoteAccess; the connection stays usable.
//   - Initiator: Post checks every op locally (fabric.ErrLocalAccess,
//     fabric.ErrQueueFull; then nothing is posted), stages the batch and
//     sends it with one write; between Cork and Uncork (fabric.Corker) Post
//     and RingBell only stage, and Uncork sends all of it with one write
//     (requests and the ring that announces them). Completions arrive in posting order; READ
//     data is in the local region when its completion is polled. Post and
//     Poll do not allocate, and never wait on the socket.
//   - Everything read from the socket is untrusted: lengths are bounded
//     (MaxOpLen) before use, unknown frames end the connection with a
//     protocol error, nothing panics.
//   - Threads: after the handshake the socket is non-blocking and leaves
//     Go's netpoller for the provider's own (poll.go): a fixed set of
//     goroutines, one per two Ps, each waiting on its epoll instance
//     (parked in the runtime's poller; at GOMAXPROCS 1 blocked in
//     epoll_wait), serve the events of every connection, so threads do
//     not grow with connections. Each
//     event reads what the socket holds and sends what it takes; nothing
//     waits on a socket. "Room to send" events are asked for once a send
//     leaves bytes staged, not at registration: a new connection wakes no
//     poller thread on either side. A WRITE is applied in the order sent
//     (fabric.InOrderWriter). While a connection is busy (ops outstanding, or
//     bytes read within busyWindow), Poll reads the socket itself (every
//     readEvery-th empty poll), so the thread waiting for a response
//     takes it without a wakeup; a target busy-polling its memory does
//     the same with Pump (fabric.Pumper). A Pump that applies a WRITE
//     holds a READ that came right behind it for the next Pump or Release
//     (rx.go): the target answers in between, so an RFP client's fetch
//     sent at once after its request finds the answer, instead of a
//     READ again per request. While a connection is so driven
//     the poller turns its input events off, and on again once nobody
//     drove it for driveWindow, or at Release (drive.go): its wake-ups
//     would take the core from the driving threads.
//   - Flow: responses are staged as requests are decoded and sent with
//     the batch; WRITE acks may wait up to ackDelay for company where
//     that has paid (ack.go: a reply-mode server's reply WRITE carries the
//     ack of its request). A peer with more responses waiting than its declared
//     queue depth (or outHigh bytes of them) is not read until they drain:
//     decoding stops at that frame and keeps the rest of the read. A long
//     READ's response is staged as a reference to the region and sent
//     from it (txref.go), not copied. A peer that takes none of
//     our bytes for Options.SendTimeout (default 1s) is cut off: the
//     connection ends with fabric.ErrPeerGone saying it stopped reading.
//     A poller reads at most rxBudget of one connection per turn and
//     comes back to it after the others' events.
//   - Handshake: every step has a deadline. The listener gives a hello
//     handshakeTimeout, runs at most maxPending at once and maxPerSource
//     per source IP (the oldest is closed past either, so a flood of
//     silent sockets cannot lock honest dialers out), and reports what it
//     turned away through Options.Logf, rate-limited
//     (fabric/internal/acceptq). A connection its peer drops within
//     youngAge of the handshake is charged what it cost beyond the work
//     it asked for: a handshake no WRITE followed counts one, and so does
//     each readCharge bytes of READs served to it. A source charged more
//     than churnBurst lately has its handshakes started at most churnRate
//     a second (listener.go): a loop of dial, whole-region READs, reset
//     costs the server that many handshakes a second, not as many as the
//     loop can make, and is never refused; honest short-lived clients
//     (connect, ask, take the answer, close) are never paced. A dialer
//     waits at most its context, or dialWait without a deadline.
//   - Failure: a closed socket, a reset, or a host that vanished (TCP
//     keepalive and TCP_USER_TIMEOUT: within about UserTimeout) ends the
//     connection: Done is closed, Err wraps fabric.ErrPeerGone,
//     outstanding ops complete with fabric.ErrPeerGone, then Post and Poll
//     return the error. After a local Close they complete with
//     fabric.ErrClosed instead. Close first sends the responses to the
//     requests its NIC already applied (at most for closeFlushTimeout, or
//     until the deadline of CloseBy, fabric.DeadlineCloser), is
//     idempotent, and unmaps the regions only once nothing reads the
//     socket or touches them.
//
// # Wire
//
// After the handshake both directions carry the same frames: requests
// (READ, WRITE + payload) from that side's initiator and responses (status,
// READ payload) from that side's NIC, in order. Responses carry no id: the
// peer serves requests in order, so the initiator matches them FIFO.
package tcp

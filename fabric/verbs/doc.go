// Package verbs is the fabric provider for real RDMA: rdma-core's libibverbs
// and librdmacm through cgo, registered under the URL scheme "rdma". It is
// built only with the build tag rdma (it needs libibverbs-dev and
// librdmacm-dev); without the tag this package is empty and the rest of
// Jakiro builds unchanged. Import it for its side effect:
//
//	import _ "github.com/jakiro-kv/jakiro/fabric/verbs"
//
// # Addresses
//
// rdma://IP:PORT[?dev=NAME&src=IP]. Connections are set up by rdma_cm over
// IB/RoCE, port space RDMA_PS_TCP, so the IP picks the device, port and
// GID, as with perftest's -R. dev (or Options.Device) names the device the
// address must resolve to (a mismatch is an error, not a silent choice);
// src binds the dialer to a source IP, which is how a GID other than the
// default one is chosen with rdma_cm (there is no numeric gid= option: the
// GID is the one that carries that IP). Listening on PORT 0 picks a free
// port; Listener.Addr reports it.
//
// # Resources
//
// Every connection, dialed or accepted, has its own protection domain,
// completion queue and RC queue pair. A listener with Options.Ready keeps
// that many accepted connections' event channels, PDs, CQs and QPs made
// ahead (ready.go): each goes to one connection and never back. Such a QP
// is not rdma_cm's (no request's id exists when it is made): the
// connection drives it through INIT, RTR and RTS with the attributes
// rdma_cm gives the request, accepts naming its number, and moves it to
// the error state at disconnect. Regions are anonymous mmap memory
// (2 MiB huge pages when the size is a multiple of 2 MiB and the system has
// them, else 4 KiB pages, logged once), registered in that domain for local
// write and remote read/write. A peer that names the rkey of a region of
// another connection gets IBV_WC_REM_ACCESS_ERR, i.e. fabric.ErrRemoteAccess.
// Desc.Addr is the region's virtual address; Desc.Key its rkey.
//
// # Handshake private data
//
// rdma_cm carries 56 bytes from the dialer (IB CM REQ) and 196 from the
// acceptor (REP), and delivers them zero-padded to those sizes, without
// the sender's length. To return exactly what the layers above sent, the
// acceptor's data travels as one length byte plus data, and the dialer's
// data either as one length byte plus up to 55 bytes or, for exactly 56
// bytes, raw with the CM's end-to-end flow-control bit set as the marker
// (that bit only advertises SEND credit support, which no QP is
// programmed from; the only SENDs are doorbell rings). An acceptor with
// doorbells appends their count to its data, in the last 3 of the 196
// bytes ([0xB7][n lo][n hi]).
//
// # Fast path
//
// Conn.Post turns the batch into one linked list of work requests and
// rings the doorbell once (one cgo call per batch). WRITEs of up to the
// QP's max_inline_data bytes are posted inline. Signaling is selective:
// one WR in every Options.QueueDepth/4 is signaled, and so is the last WR
// of every batch (so each batch reports its end); the completions of the
// unsignaled WRs before a signaled one are synthesised, in posting order,
// when its completion arrives. Conn.Poll reaps several CQ entries per
// ibv_poll_cq call. Neither allocates.
//
// # Doorbells
//
// A listener built with Options.Doorbells = n (at most MaxDoorbells) is a
// fabric.Doorbells, and dialer connections to it are fabric.Ringers;
// without the option the listener is a different type that is not, and
// neither are its dialers' connections. RingBell(i) posts a zero-length
// SEND_WITH_IMM with immediate i on the connection's QP, signaled; Poll
// reaps (and hides) its completion, and the SQ and CQ have ringSlots (16)
// entries on top of QueueDepth for unreaped rings (a 17th unreaped ring
// fails with ErrQueueFull). Each accepted connection keeps 32 zero-length
// receives posted on a receive CQ attached to a completion channel the
// listener shares per device; one goroutine waits on the channel's fd in
// the netpoller, acks and re-arms, reaps, re-posts the receives and rings
// the listener's fabric.EventBells (what WaitBell waits on). Immediates out
// of range are ignored. A peer ringing faster than receives are re-posted
// gets RNR NAKs and retries after 80 µs (the acceptor sets min_rnr_timer;
// rdma_cm's default is 655 ms). Accepted connections keep the bells alive
// after the listener closes.
//
// # Failure
//
// A goroutine per connection watches its rdma_cm event channel (through
// the Go netpoller: no thread is parked in C). RDMA_CM_EVENT_DISCONNECTED
// or DEVICE_REMOVAL closes Done with fabric.ErrPeerGone and moves the QP to
// the error state, so posted operations complete (flushed) with
// ErrPeerGone; a peer process that dies has its kernel send the disconnect.
// WC statuses map to fabric errors: remote access and invalid request to
// ErrRemoteAccess, local protection/length errors to ErrLocalAccess,
// transport retries exceeded to ErrPeerGone; operations flushed after an
// error complete with that error. Local checks at Post (region of this
// connection and still open, bounds) fail with ErrLocalAccess and post
// nothing.
package verbs

// Package fabric is Jakiro's one-sided transport: registered memory regions
// plus reliable connections that carry one-sided WRITE and READ, with the
// semantics of RDMA reliable-connected (RC) verbs. Every provider (shm, tcp,
// verbs) implements the same small interface and passes the same
// conformance suite (fabric/fabrictest), so the protocol above runs on any
// of them unchanged.
//
// # Connections
//
// A connection is set up in two steps, as with rdma_cm. Dial (initiator) or
// Listener.Accept (acceptor) returns a Setup: a connection whose protection
// domain exists but whose handshake is not done. Regions allocated with
// Setup.Alloc (or later Conn.Alloc) belong to that connection's protection
// domain: only the peer of that connection can reach them, and only through
// their Desc. Setup.Establish completes the handshake, exchanging private
// data (at most MaxDialData bytes from the dialer, MaxAcceptData bytes from
// the acceptor, the limits of RC connection management), which is how a
// server hands a client the descriptors of the regions it grants it.
//
// # One-sided operations
//
// Conn.Post posts a batch of READ and WRITE operations between a local
// region and a remote descriptor; Conn.Poll reaps their completions, one per
// operation, in posting order. The target's CPU takes no part. Read and
// Write are blocking conveniences for a connection with nothing else
// outstanding. Post and Poll of one Conn must not be called concurrently;
// Close, Done and Err may be called from any goroutine.
//
// An operation that reaches outside a remote region, or names a key the
// peer did not register in this connection's domain, completes with
// ErrRemoteAccess. As with an RC queue pair, the connection may be unusable
// after that. Local bounds are checked at Post, which then posts nothing.
//
// # Ordering contract
//
// Protocols above must rely on no more than real NICs give:
//   - The bytes of one WRITE may become visible at the target in any order
//     (a reader may see a torn, half-written range). Protocols detect
//     completeness themselves, e.g. with a sequence number at both ends of
//     a slot or a checksum.
//   - Completion of a WRITE at the initiator does not imply that the target
//     CPU already sees the data.
//   - A READ returns bytes that were in the remote region at some moment
//     during the operation, each byte independently (it too may be torn
//     against concurrent local stores).
//   - Completions of one connection are delivered in posting order.
//
// # Failure
//
// When the peer closes or dies (its process is killed), the connection
// reports it: Done is closed, Err says why, and posted or new operations
// complete with ErrPeerGone. Nothing hangs.
package fabric

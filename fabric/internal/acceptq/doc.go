// Package acceptq is the accept side that socket-based fabric listeners
// share: the loop that accepts sockets, the handshakes running on them, and
// the queue of handshaken setups waiting for the application's Accept.
//
// # Contract
//
//   - Every accepted socket runs the provider's Handshake in its own
//     goroutine, under a context that ends at Config.Timeout after the
//     accept (or at Close). The socket's deadline follows that context, so
//     a handshake blocked in a read or write returns then, whatever it does.
//     Where Config.Arrived says the peer's hello is there already (and the
//     source is not paced), the accept loop runs the handshake itself:
//     starting a goroutine wakes a thread, tens of microseconds of a join on
//     a small machine. Should the setup then find no room among the ready
//     ones, the wait for room goes to a goroutine. A Take (NewTaking) is
//     offered each handshaken setup on the goroutine that ran its
//     handshake, so the thread the hello woke answers it.
//   - At most Config.MaxPending handshakes run at once, and at most
//     Config.PerSource of them from one source (Config.Source, e.g. the
//     peer's IP address). A new socket past either cap evicts the oldest
//     handshake of the same bound (that source's, or anyone's) instead of
//     being refused: a client that sends its hello at once always gets in,
//     while a flood of silent sockets only evicts itself.
//   - A successful handshake waits (within its context) for room among the
//     Config.MaxReady setups not yet accepted; if none frees up it is
//     rejected through the provider's reject function.
//   - Temporary accept errors (out of descriptors, aborted connections)
//     back off from 5 ms to 1 s, as net/http does; any other error stops
//     the loop, and Accept reports it, prefixed with Config.Prefix.
//   - What is turned away is logged through Config.Logf at most once a
//     second per reason, with a count of what was not logged.
//   - Close stops accepting, ends every handshake, rejects the setups
//     nobody accepted, and returns once every goroutine has exited.
package acceptq

// Package server is the Jakiro server: it listens on a fabric URL, grants
// every client its request and response rings (package rfp), and runs one
// goroutine per EREW partition of the store (package kv). Only that
// goroutine touches its partition's store and rings, so requests are
// served without locks and without allocating.
//
// # Passes, the polled set and sweeps
//
// A partition goroutine works in passes. A pass looks at the partition's
// polled set — the clients that had a request in the last rfp.ActiveHold,
// and those that joined since, until their first request (up to 32) —
// and serves at most 8 ready requests of each (a client keeping a deep
// ring full waits its turn like the others), writing each result into the
// client's response ring in server memory and, when the request asks for
// it, WRITEing it into the client's memory too (reply and hybrid modes).
// Clients ring the partition's doorbell when they start sending after a
// quiet spell, and mark the request that rang (the contract is in
// rfp/bells.go); a busy partition checks its bell every 20 µs. After a
// ring it looks at the clients the fabric names as ringers (shm and tcp:
// a bitmap beside the bell), or where it names none at the clients that
// left the polled set within the last second (the warm set). Every
// client is looked at (a sweep, 32 clients a pass beside the polled set)
// only after rings that the marked requests found do not account for, and
// every second: a pass costs what the active
// clients cost, not what the connected ones cost.
//
// # Idle
//
// A partition that finds no work keeps polling for Config.SpinIdle (at
// least rfp.IdleBeforeSleep, 100 µs, on tcp rfp.TCPIdleBeforeSleep, 800 µs,
// as tcp clients ring only after TCPQuietRing; up to 10 times that while rings keep
// ending its sleeps early), giving its core to other processes
// (sched_yield) past the first 10 µs, then looks at its warm set once more
// and blocks on its doorbell until a client rings or the next housekeeping
// sweep: an idle server uses no CPU. Fabrics without doorbells, and Config.IdlePoll,
// poll every client every pass and doze in short nanosleeps instead.
//
// # The memcached door
//
// Server.Door is the memcache.Backend of package server/memcache: door
// connections hand each partition their commands in batches through the
// partition's inbox, which its goroutine runs once per pass; a sleeping
// partition is rung. A sleeping partition (at once with no RFP client,
// else once its clients sent nothing for its spin; door batches do not
// keep it awake) lends its store (a token) to the door meanwhile: a
// connection that takes the token runs its batch itself. Only the token's holder touches
// the store, so access stays exclusive; the partition takes the token back
// when it wakes and keeps it when it stops (door.go).
//
// # Clients that misbehave
//
// Clients come and go at any time: a client whose connection ends is
// removed from every partition, and its rings are freed only after every
// partition goroutine has moved past it. Requests are untrusted: malformed
// records, unknown ops, bad keys and oversize values get an error status,
// never a panic. A reply WRITE that finds no room on the client's
// connection for Config.ReplyTimeout disconnects that client, logged; no
// partition waits longer than that on one client. At most
// Config.MaxClients clients are connected; the next is refused with
// rfp.ErrServerFull. Connection churn is logged at most 20 lines a second.
//
// Close (or the end of Serve's context) stops everything the server
// started and returns once every goroutine has ended, unless a fabric call
// inside a partition does not return within a second: it then returns an
// error and leaves that memory to the process's exit.
package server

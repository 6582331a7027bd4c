package fabric

import (
	"time"
)

// Doorbells are an optional capability that lets a target with no work
// block instead of polling its memory, and be woken within microseconds:
// a listener built with Options.Doorbells = n offers bells 0..n-1; any
// connection accepted by it can ring them. A target must still scan its
// memory after waking (a bell carries no data) and before waiting (a ring
// may predate the wait; rings are remembered until the next Wait returns).
//
// Providers that have them implement Doorbells on their listener and Ringer
// on dialer-side connections; callers type-assert and fall back to polling.

// Doorbells is implemented by listeners that offer bells.
type Doorbells interface {
	// WaitBell blocks until bell i has been rung since the previous
	// WaitBell(i) returned, or until d passes. It reports whether it rang.
	// With d <= 0 it does not block: it only checks (and clears) the bell,
	// so a busy target can notice rings between passes.
	WaitBell(i int, d time.Duration) (bool, error)
	// RingBell rings bell i locally (to wake a waiter, e.g. at shutdown).
	RingBell(i int) error
}

// RingCounter is implemented by listeners whose doorbells count rings:
// BellRings is how many times bell i was rung and then seen by WaitBell
// (rings that land together count each), for the server's metrics.
type RingCounter interface {
	BellRings(i int) uint64
}

// Ringer is implemented by dialer-side connections to such listeners.
type Ringer interface {
	// RingBell rings the acceptor's bell i. A bell the acceptor does not
	// offer is ignored.
	RingBell(i int) error
}

// BellWatcher is implemented by Ringers that see whether the acceptor is
// blocked on bell i (shm: a flag in shared memory). A ring that announces
// nothing new (a reminder for a request still unanswered) is worth sending
// only to a blocked waiter: an awake one is already looking, and a ring it
// cannot explain costs it a look at every connection.
type BellWatcher interface {
	BellBlocked(i int) bool
}

// RingSources is implemented by listeners whose rings name their ringer:
// TakeRingers appends to dst the BellSource of each connection that rang
// bell i since the last call. A peer can name others or none: a waiter
// counts rings (RingCounter) and looks further when the named ringers do
// not explain them.
type RingSources interface {
	TakeRingers(i int, dst []int) []int
}

// RingSource is implemented by acceptor-side connections of such
// listeners: the name their rings carry, -1 if none.
type RingSource interface {
	BellSource() int
}

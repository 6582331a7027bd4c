package rfp

import "strings"

// The doorbell contract between clients and server partitions. A partition
// polls only the sessions that had work recently (its polled set) and may
// block on its doorbell when none has; a client rings so that a request
// never waits on a partition that is not looking at it:
//
//   - A client rings partition p's bell with a request to p when it has not
//     posted a request to p for QuietRing, and marks that request FlagRang;
//     the ring follows the request's WRITE, so it never overtakes it.
//   - Where the fabric shows the partition blocked on its bell
//     (fabric.BellWatcher), a request to it rings too, marked FlagRang,
//     however recent the last one was. Correctness does not need it (a
//     partition blocks for long only after IdleBeforeSleep, below); it
//     lets a partition on a host with no free core block for short dozes
//     instead of yielding its core, and be woken at once (server/crowd.go).
//     A partition that answered within awakeAfterAnswer is not asked
//     about: it dozes only after spinning idle longer than that, and the
//     flag is a line of memory the partition writes (a cache miss on the
//     path of every request sent one at a time).
//   - A client whose request stays unanswered rings again after RingAfter,
//     then after twice as long each time, up to MaxRingGap; at most one such
//     ring per partition at a time. These reminders (Engine.Reminder) may be
//     skipped where the fabric shows the partition awake (shm:
//     fabric.BellWatcher): rings are counted there, so the announcing ring
//     was seen, and an awake partition looks until it finds the request.
//   - A partition keeps a session in its polled set for at least ActiveHold
//     after that session's last request, and blocks on its bell only after
//     it has seen no request for at least IdleBeforeSleep. After rings it
//     looks at its polled and recently polled sessions, and then at every
//     session unless those held a FlagRang request for each ring (where the
//     fabric counts rings): a ring it cannot account for may come from any
//     session. Where the fabric also names ringers (shm, tcp:
//     Listener.NamesRingers), it looks at the named sessions instead of
//     the recently polled ones, so a ring costs a look at its ringer, not
//     at a set that grows with the clients. Rings of unanswered requests carry no mark, so they always
//     bring the look at every session.
//
// ActiveHold and IdleBeforeSleep exceed QuietRing by a margin for delivery
// delays, so a request sent without a ring lands while its session is
// still polled. All values are nanoseconds.
const (
	awakeAfterAnswer = 2_000
	QuietRing        = 50_000
	RingAfter        = 1_000_000
	MaxRingGap       = 1_000_000_000
	ActiveHold       = 1_000_000
	IdleBeforeSleep  = 2 * QuietRing
)

// On tcp a pipelined batch's round trip outlasts QuietRing, so a client
// at steady load rang with every batch (a frame and a system call each).
// Both ends of a tcp connection use TCPQuietRing instead, and its servers
// spin TCPIdleBeforeSleep; ActiveHold still exceeds it by a margin.
const (
	TCPQuietRing       = 400_000
	TCPIdleBeforeSleep = 2 * TCPQuietRing
)

// QuietRingOf is QuietRing for the fabric of a URL ("tcp://..."), and
// IdleBeforeSleepOf the matching minimum spin of its servers.
func QuietRingOf(url string) int64 {
	if strings.HasPrefix(url, "tcp://") {
		return TCPQuietRing
	}
	return QuietRing
}

// IdleBeforeSleepOf: see QuietRingOf.
func IdleBeforeSleepOf(url string) int64 { return 2 * QuietRingOf(url) }

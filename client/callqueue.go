package client

// callQueue holds one partition's calls waiting for room in a ring. It
// serves them oldest first unless it holds more than lifoQueued calls;
// then it serves the newest single call first, and the oldest once that
// one has waited lifoAgeNS (Go's sync.Mutex makes the same trade: a
// newcomer wins while no waiter has waited 1 ms).
//
// Why: a queue that long means hundreds of callers blocked on one
// connection (go-ycsb at 1,024 threads on one Client). Served in order,
// each caller's turn comes round cold: its stack, its waiter and call,
// and its own state (go-ycsb's generator, 4.9 KB a thread) out of the
// caches, and the driver, which serves them all in turn, waits on those
// misses. Served newest first, the callers just answered keep running
// warm while the rest wait. On 2 cores, go-ycsb read-only on one Client,
// 8 interleaved rounds of 1.5 s: 1,024 threads 1.19x the ops/s of
// oldest first (paired median), 0.69x -> 0.87x of 64 threads; client
// CPU per op 2.75 -> 2.27 µs (64 threads: 1.71-1.83). The price is the
// tail: a caller passed over waits lifoAgeNS, so p99 is about that
// (7.5 -> 11.2 ms) while p50 falls (2-3 ms -> 50-80 µs; the mean is set
// by the throughput, and falls with it).
//
// Only single calls jump the queue: a batch's calls keep their order
// (a SET and a GET of one key in one batch), and its caller waits for
// all of them anyway.
type callQueue struct {
	q []*call
	h int
	// headAt is the oldest call's queuedAt, kept here: next looks at it
	// at every call it takes, and the oldest call of a crowd's queue is
	// the one caller whose memory is surely out of the caches.
	headAt int64
}

const (
	// lifoQueued: the queue length past which the newest calls go
	// first. At 256 callers the callers' state still fits the caches:
	// newest first gained 0-7% there, at 5x the p99 (2 -> 10 ms).
	lifoQueued = 512
	// lifoAgeNS: how long a call may wait while newer ones go first.
	// Each caller passed over is served cold once per lifoAgeNS (1,024
	// callers every 10 ms are ~100 k of ~450 k ops/s); 20 ms measured
	// the same throughput within the noise, at p99 20 ms.
	lifoAgeNS = 10_000_000
)

func (q *callQueue) push(c *call) {
	if len(q.q) == cap(q.q) && q.h >= len(q.q)/2 {
		// A queue that never drains (more callers than its rings hold)
		// would otherwise grow without end behind its head: reuse the
		// popped half before growing (each call moves at most once per
		// doubling, so pushes stay O(1) amortized).
		n := copy(q.q, q.q[q.h:])
		clear(q.q[n:])
		q.q, q.h = q.q[:n], 0
	}
	if q.len() == 0 {
		q.headAt = c.queuedAt
	}
	q.q = append(q.q, c)
}

func (q *callQueue) len() int { return len(q.q) - q.h }

// next takes the call to put in a ring next (now: the driver's clock).
func (q *callQueue) next(now int64) *call {
	if n := len(q.q); n-q.h > lifoQueued {
		if t := q.q[n-1]; t == &t.w.one && now-q.headAt < lifoAgeNS {
			q.q[n-1] = nil
			q.q = q.q[:n-1]
			return t
		}
	}
	return q.pop()
}

// pop takes the oldest call.
func (q *callQueue) pop() *call {
	c := q.q[q.h]
	q.q[q.h] = nil
	if q.h++; q.h == len(q.q) {
		q.q, q.h = q.q[:0], 0
	} else {
		q.headAt = q.q[q.h].queuedAt
	}
	return c
}

package client

import "testing"

// single returns a single call of its own waiter, queued at t.
func single(t int64) *call {
	w := &waiter{}
	w.one.w, w.one.queuedAt = w, t
	return &w.one
}

func TestCallQueueOrder(t *testing.T) {
	var q callQueue
	short := []*call{single(0), single(1), single(2)}
	for _, c := range short {
		q.push(c)
	}
	for i, want := range short {
		if got := q.next(3); got != want {
			t.Fatalf("short queue: call %d out of order", i)
		}
	}

	// Past lifoQueued calls, the newest single call goes first.
	var calls []*call
	for i := 0; i <= lifoQueued+2; i++ {
		calls = append(calls, single(int64(i)))
		q.push(calls[i])
	}
	now := int64(lifoQueued + 3)
	for i := 0; i < 3; i++ {
		if got, want := q.next(now), calls[len(calls)-1-i]; got != want {
			t.Fatalf("long queue: pop %d is not the newest call", i)
		}
	}
	if q.len() != lifoQueued {
		t.Fatalf("len %d, want %d", q.len(), lifoQueued)
	}
	// Back to lifoQueued calls: oldest first again.
	if q.next(now) != calls[0] {
		t.Fatal("queue of lifoQueued calls: not the oldest first")
	}

	// The oldest call waited lifoAgeNS: it goes first.
	q.push(single(now))
	q.push(single(now))
	if got := q.next(1 + lifoAgeNS); got != calls[1] {
		t.Fatal("a call that waited lifoAgeNS was passed over")
	}

	// A batch's call at the tail keeps its place: the oldest goes.
	w := &waiter{}
	b := &call{w: w, queuedAt: now}
	q.push(b)
	if got := q.next(now); got != calls[2] {
		t.Fatal("a batch's call went ahead of older calls")
	}
}

func TestCallQueueDrains(t *testing.T) {
	var q callQueue
	var calls []*call
	for i := range 4 * lifoQueued {
		calls = append(calls, single(int64(i)))
		q.push(calls[i])
	}
	seen := map[*call]bool{}
	for q.len() > 0 {
		c := q.next(int64(4 * lifoQueued))
		if seen[c] {
			t.Fatal("a call came out twice")
		}
		seen[c] = true
	}
	if len(seen) != len(calls) {
		t.Fatalf("%d of %d calls came out", len(seen), len(calls))
	}
}

// A queue that never drains (more callers than the rings hold) keeps its
// memory bounded by what it holds, not by what passed through it.
func TestCallQueueBounded(t *testing.T) {
	var q callQueue
	calls := make([]call, 1000)
	for i := range calls {
		q.push(&calls[i])
	}
	for i := range 1_000_000 {
		c := q.pop()
		if want := &calls[i%len(calls)]; c != want {
			t.Fatalf("pop %d: got call %p, want %p (order lost)", i, c, want)
		}
		q.push(c)
	}
	if q.len() != len(calls) {
		t.Fatalf("len %d, want %d", q.len(), len(calls))
	}
	if cap(q.q) > 4*len(calls) {
		t.Fatalf("cap %d after 1e6 calls through a queue of %d: it grows behind its head", cap(q.q), len(calls))
	}
}

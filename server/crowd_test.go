package server

import (
	"testing"
	"time"
)

// yields feeds w n yields of d each, back to back from t, and returns the
// clock after them.
func yields(w *crowdWatch, t int64, n int, d time.Duration) int64 {
	for i := 0; i < n; i++ {
		w.yielded(t, t+int64(d))
		t += int64(d) + int64(time.Microsecond) // a pass between yields
	}
	return t
}

// A host with a free core: quick yields, and late ones now and then (the
// clients beside the server), never make it crowded.
func TestCrowdWatchFreeCore(t *testing.T) {
	var w crowdWatch
	now := int64(time.Second)
	for i := 0; i < 1000; i++ {
		now = yields(&w, now, 1000, 4*time.Microsecond) // 5 ms
		now = yields(&w, now, 1, 900*time.Microsecond)  // late: 200 a second (go-ycsb beside the server on 2 cores)
		if w.crowded(now) {
			t.Fatalf("crowded after %d windows of quick yields and one late one", i+1)
		}
	}
}

// No free core: every yield loses a slice. Within a window the partition
// dozes instead; after the hold it yields again, and a window of late
// yields holds it twice as long, up to crowdHoldMax; a window of quick
// yields ends it.
// A client beside the server that takes the core for a few hundred
// microseconds whenever the partition yields (a loop of joins on 2 cores)
// does not make it crowded: the partition is waiting for that work.
func TestCrowdWatchClientBursts(t *testing.T) {
	var w crowdWatch
	now := int64(time.Second)
	for i := 0; i < 100; i++ {
		now = yields(&w, now, 30, 600*time.Microsecond) // 18 ms, all of it away
		if w.crowded(now) {
			t.Fatalf("crowded after %d windows of yields of 600 µs", i+1)
		}
	}
}

func TestCrowdWatchNoFreeCore(t *testing.T) {
	var w crowdWatch
	now := int64(time.Second)
	start := now
	for !w.crowded(now) {
		now = yields(&w, now, 1, 3*time.Millisecond)
		if now-start > 2*crowdWindow {
			t.Fatal("not crowded after two windows of yields that each lost a slice")
		}
	}
	holds := []int64{}
	for len(holds) < 10 {
		holds = append(holds, w.hold)
		now = w.until // dozed through the hold
		if w.crowded(now) {
			t.Fatal("still crowded at the hold's end")
		}
		for !w.crowded(now) {
			now = yields(&w, now, 1, 3*time.Millisecond)
		}
	}
	if holds[0] != crowdHoldMin || holds[1] != 2*crowdHoldMin || holds[9] != crowdHoldMax {
		t.Fatalf("holds %v: want %d doubling to %d", holds, crowdHoldMin, crowdHoldMax)
	}
	now = yields(&w, w.until, 2000, 5*time.Microsecond) // a core came free
	if w.crowded(now) || w.hold != 0 {
		t.Fatalf("crowded (hold %d) after windows of quick yields", w.hold)
	}
	for !w.crowded(now) {
		now = yields(&w, now, 1, 3*time.Millisecond)
	}
	if w.hold != crowdHoldMin {
		t.Fatalf("hold %d after a free spell, want %d again", w.hold, crowdHoldMin)
	}
}

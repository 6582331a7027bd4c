package client

import "testing"

func TestStallWatch(t *testing.T) {
	var s stallWatch
	steps := []struct {
		now  int64
		woke int
		left int32
		want bool
	}{
		{100, 0, 3, false},                 // first pass: the watch starts
		{100 + stallNS - 1, 0, 3, false},   // not yet
		{100 + stallNS, 0, 3, true},        // stalled
		{100 + stallNS + 1, 0, 3, false},   // once per stallNS
		{100 + 2*stallNS, 0, 3, true},      // still stalled
		{100 + 2*stallNS + 5, 1, 3, false}, // a caller woken: progress
		{100 + 3*stallNS + 4, 0, 3, false}, // counted from that progress
		{100 + 3*stallNS + 5, 0, 3, true},  //
		{100 + 3*stallNS + 6, 0, 2, false}, // one of the driver's own calls done
		{100 + 4*stallNS + 5, 0, 2, false}, //
		{100 + 4*stallNS + 6, 0, 2, true},  //
	}
	for i, st := range steps {
		if got := s.due(st.now, st.woke, st.left); got != st.want {
			t.Fatalf("step %d (now %d, woke %d, left %d): due %v, want %v", i, st.now, st.woke, st.left, got, st.want)
		}
	}
}

// A stall that lasts past stallNapNS makes the driver sleep a quarter of
// it, within stallNapMin and stallNapMax; progress starts it over.
func TestStallWatchNap(t *testing.T) {
	var s stallWatch
	s.due(1000, 0, 3) // the first pass: progress at 1000
	steps := []struct {
		now  int64
		woke int
		want int64
	}{
		{1000 + stallNS, 0, 0},
		{1000 + stallNapNS - 1, 0, 0},
		{1000 + stallNapNS, 0, stallNapNS / 4},
		{1000 + 4*stallNapNS, 0, stallNapMax / 2},
		{1000 + 20*stallNapNS, 0, stallNapMax},
		{1000 + 21*stallNapNS, 1, 0}, // an answer: no stall
		{1000 + 21*stallNapNS + stallNapNS/2, 0, 0},
	}
	for i, st := range steps {
		s.due(st.now, st.woke, 3)
		if got := s.nap(st.now); got != st.want {
			t.Fatalf("step %d (now %d): nap %d, want %d", i, st.now, got, st.want)
		}
	}
	if stallNapMin*4 > stallNapNS {
		t.Fatalf("stallNapMin %d: a nap past stallNapNS would exceed a quarter of the stall", stallNapMin)
	}
}

package rfp

import "testing"

func TestAutoRFSCoversP95(t *testing.T) {
	a := NewAutoRFS(RFSFor(32), 1<<16)
	for i := 0; i < 10000; i++ {
		n := 40
		if i%100 < 3 { // 3% large values: outside the 95th percentile
			n = 900
		}
		a.Observe(n)
	}
	if got := a.RFS(); got != RFSFor(40) {
		t.Fatalf("RFS %d, want %d", got, RFSFor(40))
	}
	for i := 0; i < 20000; i++ {
		a.Observe(300)
	}
	if got := a.RFS(); got < RFSFor(300) || got > RFSFor(312) {
		t.Fatalf("RFS %d after shift to 300 B values", got)
	}
}

func TestHybridSwitches(t *testing.T) {
	h := NewHybrid(3, 4)
	for i := 0; i < 2; i++ {
		h.OnFetch(false)
	}
	if h.Reply() {
		t.Fatal("switched before R misses")
	}
	h.OnFetch(false)
	if !h.Reply() {
		t.Fatal("not replying after R misses")
	}
	for i := 0; i < 4; i++ {
		h.OnReplied()
	}
	if h.Reply() {
		t.Fatal("no probe after ProbeOps replies")
	}
	h.OnFetch(true)
	if h.Reply() {
		t.Fatal("left fetch mode though fetching pays")
	}
}

func TestFetchDelayAdapts(t *testing.T) {
	d := NewFetchDelay(-1)
	start := d.NS()
	d.OnFirstRead(false, false, 10, 20)
	if d.NS() <= start {
		t.Fatal("a miss did not lengthen the delay")
	}
	grown := d.NS()
	d.OnFirstRead(false, false, 15, 25) // sent before the increase: same burst
	if d.NS() != grown {
		t.Fatal("one burst of misses grew the delay twice")
	}
	d.OnFirstRead(false, false, 30, 40)
	if d.NS() <= grown {
		t.Fatal("a later miss did not grow the delay")
	}
	for i := 0; i < 100000; i++ {
		d.OnFirstRead(true, false, 0, 0)
	}
	if d.NS() != minFetchDelay {
		t.Fatalf("delay %d did not settle at the minimum", d.NS())
	}
	// Alone in flight, hits shrink it faster: latency is all that is at stake.
	a, w := NewFetchDelay(-1), NewFetchDelay(-1)
	a.OnFirstRead(false, true, 1, 2)
	w.OnFirstRead(false, false, 1, 2)
	for i := 0; i < 4096; i++ {
		a.OnFirstRead(true, true, 0, 0)
		w.OnFirstRead(true, false, 0, 0)
	}
	if a.NS() >= w.NS() {
		t.Fatalf("alone %d ns, in a window %d ns: alone should shrink faster", a.NS(), w.NS())
	}
	f := NewFetchDelay(0)
	f.OnFirstRead(false, false, 1, 2)
	if f.NS() != 0 {
		t.Fatal("fixed delay moved")
	}
}

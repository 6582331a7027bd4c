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
		h.OnDone(true, 50_000)
	}
	if h.Reply() {
		t.Fatal("no probe after ProbeOps replies")
	}
	// The probe finds fetching faster: hybrid settles on it.
	for i := 0; i < probeLen; i++ {
		h.OnFetch(true)
		h.OnDone(false, 10_000)
	}
	if h.Reply() {
		t.Fatal("left fetch mode though fetching pays")
	}
}

// run sends n requests through h, each taking fetchNS or replyNS by the
// mode h picks, and returns how many asked for replies.
func run(h *Hybrid, n int, fetchNS, replyNS int64) (replies int) {
	for i := 0; i < n; i++ {
		if h.Reply() {
			replies++
			h.OnDone(true, replyNS)
		} else {
			h.OnFetch(true)
			h.OnDone(false, fetchNS)
		}
	}
	return replies
}

// Where replies answer faster (a READ costs a message: tcp), hybrid
// settles on them without a single not-ready READ, and probes fetching
// ever more rarely; where fetching is faster (shm, RDMA) it stays there.
func TestHybridLearnsFasterMode(t *testing.T) {
	h := NewHybrid(3, 256)
	run(h, 256+probeLen, 100_000, 50_000) // fetch, then a probe of replies
	if !h.Reply() {
		t.Fatal("not replying after replies proved twice as fast")
	}
	if r := run(h, 10_000, 100_000, 50_000); r < 9_800 {
		t.Fatalf("%d of 10,000 requests replied; want nearly all", r)
	}
	h = NewHybrid(3, 256)
	if r := run(h, 10_000, 2_000, 5_000); r > 200 {
		t.Fatalf("%d of 10,000 requests replied though fetching is faster", r)
	}
	if h.Reply() {
		t.Fatal("settled on replies though fetching is faster")
	}
	// Within the noise margin nothing moves: a mode changes only for a
	// clear gain.
	h = NewHybrid(3, 256)
	run(h, 10_000, 10_000, 9_500)
	if h.Reply() {
		t.Fatal("moved to replies for a 5% gain")
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

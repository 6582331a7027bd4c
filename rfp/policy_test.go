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
	now := int64(0)
	for i := 0; i < 4; i++ {
		now += 50_000
		h.OnDone(true, 50_000, now)
	}
	if h.Reply() {
		t.Fatal("no probe after ProbeOps replies")
	}
	// The probe finds fetching cheaper: hybrid settles on it, and a
	// streak of misses no longer moves it.
	for i := 0; i < probeLen; i++ {
		now += 10_000
		h.OnFetch(true)
		h.OnDone(false, 10_000, now)
	}
	if h.Reply() {
		t.Fatal("left fetch mode though fetching pays")
	}
	for i := 0; i < 3; i++ {
		h.OnFetch(false)
	}
	if h.Reply() {
		t.Fatal("a miss streak overrode the measured cheaper mode")
	}
}

// clock is a closed loop of one caller: each request ends when the
// previous one did plus its cost in the mode h picked.
type clock struct{ now int64 }

// run sends n requests through h, each costing fetchNS or replyNS by the
// mode h picks, and returns how many asked for replies.
func (c *clock) run(h *Hybrid, n int, fetchNS, replyNS int64) (replies int) {
	for i := 0; i < n; i++ {
		if h.Reply() {
			replies++
			c.now += replyNS
			h.OnDone(true, replyNS, c.now)
		} else {
			h.OnFetch(true)
			c.now += fetchNS
			h.OnDone(false, fetchNS, c.now)
		}
	}
	return replies
}

// Where replies serve faster (a READ costs a message: tcp), hybrid
// settles on them without a single not-ready READ, and probes fetching
// ever more rarely; where fetching is faster (shm, RDMA) it stays there.
func TestHybridLearnsFasterMode(t *testing.T) {
	var c clock
	h := NewHybrid(3, 256)
	c.run(h, 256+probeLen, 100_000, 50_000) // fetch, then a probe of replies
	if !h.Reply() {
		t.Fatal("not replying after replies proved twice as fast")
	}
	if r := c.run(h, 10_000, 100_000, 50_000); r < 9_800 {
		t.Fatalf("%d of 10,000 requests replied; want nearly all", r)
	}
	h = NewHybrid(3, 256)
	if r := c.run(h, 10_000, 2_000, 5_000); r > 1_000 { // probes of at least probeNS
		t.Fatalf("%d of 10,000 requests replied though fetching is faster", r)
	}
	if h.Reply() {
		t.Fatal("settled on replies though fetching is faster")
	}
	// Within the noise margin nothing moves: a mode changes only for a
	// clear gain.
	h = NewHybrid(3, 256)
	c.run(h, 10_000, 10_000, 9_500)
	if h.Reply() {
		t.Fatal("moved to replies for a 5% gain")
	}
}

// When the load changes, hybrid looks again soon: a mode that lost a probe
// long ago wins it once it is the cheaper one.
func TestHybridFollowsLoad(t *testing.T) {
	var c clock
	h := NewHybrid(3, 256)
	c.run(h, 20_000, 2_000, 5_000) // fetching cheaper: probes grow rare
	if h.Reply() {
		t.Fatal("replying though fetching is cheaper")
	}
	// Now fetching costs 10x more (say, each request waits behind a
	// window of others), replies half of that.
	if r := c.run(h, 4_000, 20_000, 10_000); r < 2_000 {
		t.Fatalf("%d of 4,000 requests replied after the load changed; want most", r)
	}
	if !h.Reply() {
		t.Fatal("not replying after the load made replies cheaper")
	}
}

// Idle gaps between bursts do not count against the mode in use.
func TestHybridIgnoresIdleGaps(t *testing.T) {
	var p phase
	p.add(0)
	p.add(1_000)
	p.add(1_000 + 50*idleGap) // the caller went quiet
	p.add(2_000 + 50*idleGap)
	if got := p.ns(); got > (idleGap+2_000)/3+1 {
		t.Fatalf("cost %d ns per request: the idle gap counted in full", got)
	}
}

// Auto starts with replies only where the NIC is a host thread.
func TestAutoStartsByFabric(t *testing.T) {
	if ModeAuto.Policy(0, false).Reply() {
		t.Fatal("auto on shm/RDMA starts with replies")
	}
	if !ModeAuto.Policy(0, true).Reply() {
		t.Fatal("auto on tcp starts by fetching")
	}
	if ModeHybrid.Policy(0, true).Reply() {
		t.Fatal("hybrid starts with replies (the paper's starts by fetching)")
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

// The delay stops growing at maxFetchDelay where READs are quick, and at
// a few READ round trips where they are slow (soft-RoCE under emulation),
// never past maxTripDelay.
func TestFetchDelayCapFollowsReadTrips(t *testing.T) {
	grow := func(d *FetchDelay) {
		for i := int64(1); i < 2000; i++ {
			d.OnFirstRead(false, true, 100*i, 100*i+50) // each a new generation
		}
	}
	quick := NewFetchDelay(-1)
	quick.OnReadTrip(3_000)
	grow(&quick)
	if quick.NS() != maxFetchDelay {
		t.Fatalf("3 us READs: delay %d ns, want the %d ns cap", quick.NS(), maxFetchDelay)
	}
	slow := NewFetchDelay(-1)
	for range 50 {
		slow.OnReadTrip(100_000)
	}
	grow(&slow)
	if want := int64(tripCap * 100_000); slow.NS() < want*9/10 || slow.NS() > want {
		t.Fatalf("100 us READs: delay %d ns, want about %d", slow.NS(), want)
	}
	stuck := NewFetchDelay(-1)
	stuck.OnReadTrip(1_000_000_000)
	grow(&stuck)
	if stuck.NS() != maxTripDelay {
		t.Fatalf("1 s READs: delay %d ns, want the %d ns bound", stuck.NS(), maxTripDelay)
	}
}

package rfp

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jakiro-kv/jakiro/fabric"
)

func adaptive(m Mode) EngineConfig { return EngineConfig{Mode: m, FetchDelayNS: -1} }

func TestEngineGetPutDelete(t *testing.T) {
	h := newHarness(t, 2, 8, 1024, adaptive(ModeRFP))
	key, val := []byte("k1"), []byte("value-one")
	if r := h.do(1, OpGet, key, nil); r.st != StatusNotFound {
		t.Fatalf("GET of a missing key: %v", r.st)
	}
	if r := h.do(1, OpPut, key, val); r.st != StatusOK {
		t.Fatalf("PUT: %v", r.st)
	}
	if r := h.do(1, OpGet, key, nil); r.st != StatusOK || !bytes.Equal(r.val, val) {
		t.Fatalf("GET: %v %q", r.st, r.val)
	}
	if r := h.do(1, OpDelete, key, nil); r.st != StatusOK {
		t.Fatalf("DELETE: %v", r.st)
	}
	c := h.e.Counters()
	if c.Ops != 4 || c.Writes != 4 || c.Reads != 4 || c.NotReady != 0 || c.Torn != 0 {
		t.Fatalf("counters %+v: want one WRITE and one READ per request", c)
	}
	if h.e.Active() != 0 {
		t.Fatalf("%d requests still active", h.e.Active())
	}
}

// A READ whose bytes land torn (only a prefix new, the rest stale) fails
// the checksum and is read again; the stale bytes never reach a caller.
func TestEngineTornReadIsReadAgain(t *testing.T) {
	h := newHarness(t, 1, 8, 1024, adaptive(ModeRFP))
	val := bytes.Repeat([]byte("v"), 24)
	h.do(0, OpPut, []byte("k"), val)
	// Leave garbage where the next response's value will land.
	off := h.l.RespBase(0) + int(h.e.parts[0].rpos%uint64(h.l.RespRing))
	copy(h.local.Bytes()[off+respHeader:], bytes.Repeat([]byte{0xee}, 40))
	slot := h.submit(0, OpGet, []byte("k"), nil)
	torn := 0
	h.tear = func(op fabric.Op) int {
		if op.Kind == fabric.OpRead && torn == 0 && h.srv.served >= 2 {
			torn++
			return respHeader + 10 // header and 10 value bytes arrive, the rest later
		}
		return op.Len
	}
	r := h.result(slot)
	if r.st != StatusOK || !bytes.Equal(r.val, val) {
		t.Fatalf("accepted %v %q, want the stored value", r.st, r.val)
	}
	if c := h.e.Counters(); torn != 1 || c.Torn != 1 {
		t.Fatalf("torn READs %d, counted %d: want 1 seen and counted", torn, c.Torn)
	}
}

// Every accepted value is one the server stored, whatever bytes of each
// READ arrive (each byte old or new, independently, as the fabric allows).
func TestEngineNeverAcceptsTornValues(t *testing.T) {
	h := newHarness(t, 2, 8, 512, adaptive(ModeRFP))
	rng := rand.New(rand.NewPCG(1, 2))
	mem := h.local.Bytes()
	h.tear = func(op fabric.Op) int {
		if op.Kind != fabric.OpRead || rng.IntN(3) != 0 {
			return op.Len
		}
		// Copy a random subset of bytes now; report none as the prefix.
		lo, ro := op.LocalOff, int(op.RemoteOff)
		for i := 0; i < op.Len; i++ {
			if rng.IntN(2) == 0 {
				mem[lo+i] = h.srv.grant[ro+i]
			}
		}
		return 0
	}
	valueOf := func(k, ver int) []byte {
		n := 1 + (k*7+ver*13)%300
		return bytes.Repeat([]byte{byte(k), byte(ver)}, n)[:n]
	}
	versions := map[int]int{}
	for i := 0; i < 3000; i++ {
		k := rng.IntN(20)
		key := []byte(fmt.Sprintf("key-%d", k))
		p := PartitionOf(KeyHash(key), 2)
		if rng.IntN(4) == 0 {
			versions[k]++
			if r := h.do(p, OpPut, key, valueOf(k, versions[k])); r.st != StatusOK {
				t.Fatalf("PUT: %v", r.st)
			}
			continue
		}
		r := h.do(p, OpGet, key, nil)
		want := valueOf(k, versions[k])
		if versions[k] == 0 {
			if r.st != StatusNotFound {
				t.Fatalf("GET of a never-stored key: %v", r.st)
			}
			continue
		}
		if r.st != StatusOK || !bytes.Equal(r.val, want) {
			t.Fatalf("op %d: accepted %v %x, want %x", i, r.st, r.val, want)
		}
	}
	if c := h.e.Counters(); c.Torn == 0 {
		t.Fatalf("no READ was seen torn: the test did not tear (%+v)", c)
	}
}

// A READ may overtake the WRITE before it (the WRITE's bytes land later):
// it finds nothing, and the request is fetched again.
func TestEngineWriteLandsAfterRead(t *testing.T) {
	h := newHarness(t, 1, 8, 1024, EngineConfig{FetchDelayNS: 0})
	h.do(0, OpPut, []byte("k"), []byte("v"))
	slot := h.submit(0, OpGet, []byte("k"), nil)
	h.e.Tick(h.now) // delay 0: the READ is due at once
	h.post()
	if len(h.inflight) != 2 || h.inflight[0].Kind != fabric.OpWrite || h.inflight[1].Kind != fabric.OpRead {
		t.Fatalf("in flight %+v: want the WRITE, then the READ", h.inflight)
	}
	h.apply(1) // the READ's bytes first: the request is not there yet
	h.apply(0)
	h.srv.serve()
	h.complete()
	if _, ok := h.results[slot]; ok {
		t.Fatal("a result from a READ that overtook its request")
	}
	if r := h.result(slot); r.st != StatusOK || string(r.val) != "v" {
		t.Fatalf("GET: %v %q", r.st, r.val)
	}
	if c := h.e.Counters(); c.NotReady != 1 {
		t.Fatalf("not-ready READs %d, want 1", c.NotReady)
	}
}

// A reply can land before the request WRITE's completion: with rings the
// engine may take it then (the server answered, so the record's bytes
// arrived), and the WRITE's completion that follows changes nothing.
func TestEngineReplyBeforeWriteCompletion(t *testing.T) {
	h := newHarness(t, 1, 8, 1024, adaptive(ModeReply))
	slot := h.submit(0, OpPut, []byte("k"), []byte("v"))
	h.post()
	h.apply(0)
	h.srv.serve() // replies into local memory at once
	h.e.Tick(h.now)
	h.take()
	if r, ok := h.results[slot]; !ok || r.st != StatusOK {
		t.Fatalf("no result from a reply in local memory: %v", r)
	}
	h.complete()
	if len(h.order) != 1 || h.e.Active() != 0 || !h.e.Free(0) {
		t.Fatalf("after the WRITE completed: results %v, %d active", h.order, h.e.Active())
	}
	if r := h.do(0, OpGet, []byte("k"), nil); r.st != StatusOK || string(r.val) != "v" {
		t.Fatalf("GET: %v %q", r.st, r.val)
	}
}

// A reply whose bytes land torn (header first, value later) is not taken
// until it is whole.
func TestEngineTornReplyWaits(t *testing.T) {
	h := newHarness(t, 1, 8, 1024, adaptive(ModeReply))
	val := bytes.Repeat([]byte("r"), 100)
	h.do(0, OpPut, []byte("k"), val)
	h.srv.conn.late = true
	slot := h.submit(0, OpGet, []byte("k"), nil)
	h.step() // WRITE lands, server answers; its reply is held back
	if len(h.srv.conn.held) != 1 {
		t.Fatalf("%d replies held, want 1", len(h.srv.conn.held))
	}
	w := h.srv.conn.held[0]
	copy(h.local.Bytes()[w.op.RemoteOff:], w.data[:respHeader]) // the header alone
	for i := 0; i < 10; i++ {
		h.step()
		h.now += 100
	}
	if _, ok := h.results[slot]; ok {
		t.Fatal("took a reply whose value had not landed")
	}
	h.srv.flushReplies()
	if r := h.result(slot); r.st != StatusOK || !bytes.Equal(r.val, val) {
		t.Fatalf("GET: %v %q", r.st, r.val)
	}
}

// In reply mode nothing is fetched: every result comes by server WRITE.
func TestEngineReplyMode(t *testing.T) {
	h := newHarness(t, 2, 8, 1024, adaptive(ModeReply))
	for i := 0; i < 50; i++ {
		key := []byte(fmt.Sprintf("k%d", i))
		h.do(i%2, OpPut, key, key)
		if r := h.do(i%2, OpGet, key, nil); !bytes.Equal(r.val, key) {
			t.Fatalf("GET %s: %q", key, r.val)
		}
	}
	c := h.e.Counters()
	if c.Reads != 0 || c.Replied != c.Ops || c.Ops != 100 {
		t.Fatalf("counters %+v: want no READs and every op replied", c)
	}
	// Every request asked for the reply.
	for i, f := range h.srv.flags {
		if f&FlagReply == 0 {
			t.Fatalf("request %d without FlagReply in reply mode", i)
		}
	}
}

// A value longer than the fetch comes in a second READ of the rest.
func TestEngineValueLongerThanFetch(t *testing.T) {
	h := newHarness(t, 1, 8, 4096, EngineConfig{RFS: RFSFor(32), FetchDelayNS: -1})
	val := bytes.Repeat([]byte("0123456789"), 100)
	h.do(0, OpPut, []byte("big"), val)
	before := h.e.Counters()
	slot := h.submit(0, OpGet, []byte("big"), nil)
	r := h.result(slot)
	if r.st != StatusOK || !bytes.Equal(r.val, val) {
		t.Fatalf("GET: %v, %d bytes", r.st, len(r.val))
	}
	var reads []fabric.Op
	for _, ops := range h.posts {
		for _, op := range ops {
			if op.Kind == fabric.OpRead && op.ID>>idShift == 0 {
				reads = append(reads, op)
			}
		}
	}
	d := h.e.Counters().Sub(before)
	if d.ExtraReads != 1 || d.Reads != 2 || len(reads) < 2 {
		t.Fatalf("counters %+v, READs %+v: want the RFS, then the rest", d, reads)
	}
	first, second := reads[len(reads)-2], reads[len(reads)-1]
	if whole := respHeader + len(val) + sumSize; first.Len != RFSFor(32) || second.LocalOff != first.LocalOff+first.Len || second.LocalOff+second.Len-first.LocalOff != whole {
		t.Fatalf("READs %+v then %+v: want [0,%d) then up to %d", first, second, RFSFor(32), whole)
	}
}

// Auto RFS grows to cover the values seen, after which a GET is one WRITE
// and one READ again.
func TestEngineAutoRFSGrows(t *testing.T) {
	h := newHarness(t, 1, 8, 4096, adaptive(ModeRFP))
	val := bytes.Repeat([]byte("x"), 300)
	h.do(0, OpPut, []byte("k"), val)
	if h.e.RFS() != RFSFor(32) {
		t.Fatalf("starting RFS %d, want %d", h.e.RFS(), RFSFor(32))
	}
	for i := 0; i < rfsRecalc; i++ {
		h.do(0, OpGet, []byte("k"), nil)
	}
	if got := h.e.RFS(); got < RFSFor(300) {
		t.Fatalf("RFS %d after %d GETs of 300 B, want >= %d", got, rfsRecalc, RFSFor(300))
	}
	before := h.e.Counters()
	lap := h.e.parts[0].rpos / uint64(h.l.RespRing)
	for i := 0; i < 100; i++ {
		if r := h.do(0, OpGet, []byte("k"), nil); !bytes.Equal(r.val, val) {
			t.Fatal("wrong value")
		}
	}
	// One WRITE and one READ per GET, but where a response wraps to the
	// ring's start: then two READs, and the rest of it in one more.
	laps := h.e.parts[0].rpos/uint64(h.l.RespRing) - lap
	if d := h.e.Counters().Sub(before); d.Writes != d.Ops || d.Reads > d.Ops+2*laps || d.ExtraReads > laps {
		t.Fatalf("after growing: %+v over %d wraps, want 2 fabric ops per GET", d, laps)
	}
}

// A server slower than the fetch delay: first READs miss, the retry
// finds the result, and the delay grows towards the server's pace.
func TestEngineRetriesAndDelayGrows(t *testing.T) {
	h := newHarness(t, 1, 8, 1024, adaptive(ModeRFP))
	h.do(0, OpPut, []byte("k"), []byte("v"))
	start := h.e.FetchDelayNS()
	const serveAfter = 3000 // ns after the request: slower than the delay
	for i := 0; i < 20; i++ {
		slot := h.submit(0, OpGet, []byte("k"), nil)
		sent := h.now
		h.srv.stalled = true
		h.runUntil(func() bool {
			h.srv.stalled = h.now-sent < serveAfter
			_, ok := h.results[slot]
			return ok
		}, 100, h.now+1e9)
		delete(h.results, slot)
	}
	c := h.e.Counters()
	if c.NotReady == 0 {
		t.Fatal("no READ found the result missing")
	}
	if got := h.e.FetchDelayNS(); got <= start {
		t.Fatalf("fetch delay %d ns after near misses, started at %d", got, start)
	}
}

// After a miss, a retry whose lateness is the driver's own (it yielded
// its core) still teaches the delay; without the yield a late result is a
// stall and teaches nothing.
func TestEngineYieldedNearMiss(t *testing.T) {
	for _, yielded := range []bool{false, true} {
		h := newHarness(t, 1, 8, 1024, adaptive(ModeRFP))
		h.do(0, OpPut, []byte("k"), []byte("v"))
		start := h.e.FetchDelayNS()
		slot := h.submit(0, OpGet, []byte("k"), nil)
		h.srv.stalled = true
		h.runUntil(func() bool { return h.e.Counters().NotReady == 1 }, 100, h.now+1e6)
		if yielded {
			h.e.Yielded()
		}
		h.now += 100 * start // far later than any near miss
		h.srv.stalled = false
		h.result(slot)
		grew := h.e.FetchDelayNS() > start
		if grew != yielded {
			t.Fatalf("yielded %v: delay %d → %d", yielded, start, h.e.FetchDelayNS())
		}
	}
}

// A stalled server: one READ at a time per partition (it fetches the
// responses of every request in flight, paced by the oldest's misses), retries backing off to maxRetryGap,
// and doorbell rings on one schedule per partition: the first request
// rings, then RingAfter, then doubling, ≤ 20 rings in 2 s.
func TestEngineStalledServer(t *testing.T) {
	h := newHarness(t, 1, 8, 1024, EngineConfig{FetchDelayNS: -1, Bells: true})
	h.srv.stalled = true
	t0 := h.now
	slots := make([]int, 8)
	for i := range slots {
		slots[i] = h.submit(0, OpPut, []byte(fmt.Sprintf("k%d", i)), []byte("v"))
	}
	const stall = int64(2e9)
	const oldest = 0 // the partition
	var lastRead, lastGap int64 = -1, 0
	ringsBefore := [2]int{} // rings by the last two READs: a ring restarts the backoff from the READ after it
	maxReads := 0           // READs in one post
	for h.now < t0+stall {
		n := len(h.posts)
		h.step()
		for _, ops := range h.posts[n:] {
			reads := 0
			for _, op := range ops {
				if op.Kind != fabric.OpRead {
					continue
				}
				if reads++; reads > maxReads {
					maxReads = reads
				}
				if op.ID>>idShift != oldest {
					continue
				}
				if lastRead >= 0 {
					gap := h.now - lastRead
					if gap+100 < lastGap && len(h.rings) == ringsBefore[0] {
						t.Fatalf("retry gap shrank from %d to %d ns at %d without a ring", lastGap, gap, h.now)
					}
					lastGap = gap
				}
				lastRead, ringsBefore = h.now, [2]int{ringsBefore[1], len(h.rings)}
			}
		}
		h.now = max(h.now+100, min(h.e.Next(), t0+stall))
	}
	if maxReads != 1 {
		t.Fatalf("%d READs posted at once during the stall, want 1: one READ fetches all 8 responses", maxReads)
	}
	if lastGap < maxRetryGap/2 {
		t.Fatalf("retries %d ns apart after 2 s: they did not back off", lastGap)
	}
	rings := h.rings
	if len(rings) > 20 || len(rings) < 10 {
		t.Fatalf("%d rings over a 2 s stall, want 10..20: %v", len(rings), rings)
	}
	if h.e.Counters().Rings != uint64(len(rings)) {
		t.Fatalf("counted %d rings, rang %d", h.e.Counters().Rings, len(rings))
	}
	if rings[0].at != t0 {
		t.Fatalf("first ring at %d, want with the first request at %d", rings[0].at, t0)
	}
	gap := int64(RingAfter)
	for i := 1; i < len(rings); i++ {
		d := rings[i].at - rings[i-1].at
		if d < gap || d > gap+maxRetryGap+100 {
			t.Fatalf("ring %d came %d ns after the last, want %d (rings %v)", i, d, gap, rings)
		}
		gap = min(2*gap, MaxRingGap)
	}
	// The server comes back: every request is answered, in order.
	h.srv.stalled = false
	for _, s := range slots {
		if r := h.result(s); r.st != StatusOK {
			t.Fatalf("slot %d: %v", s, r.st)
		}
	}
	for i, s := range h.order {
		if s != slots[i] {
			t.Fatalf("results in order %v, want %v", h.order, slots)
		}
	}
}

// Rings: a request to a partition that had none for QuietRing rings it,
// in the same step that posts the request (the driver rings after
// posting); requests closer together do not ring; each partition rings at
// most once per step.
func TestEngineRingsAfterQuiet(t *testing.T) {
	h := newHarness(t, 2, 8, 1024, EngineConfig{FetchDelayNS: -1, Bells: true})
	h.submit(0, OpPut, []byte("a"), nil)
	h.submit(0, OpPut, []byte("b"), nil)
	h.submit(1, OpPut, []byte("c"), nil)
	if rings := h.e.Rings(); len(rings) != 2 || rings[0] != 0 || rings[1] != 1 {
		t.Fatalf("rings %v, want partitions 0 and 1 once each", rings)
	}
	if ops := h.e.Pending(); len(ops) != 2 {
		t.Fatalf("%d ops pending with the rings, want the 2 WRITEs (one per partition) they announce", len(ops))
	}
	h.runUntil(func() bool { return h.e.Active() == 0 }, 100, 1e6)
	h.now += QuietRing / 2
	h.do(0, OpGet, []byte("b"), nil)
	if n := len(h.rings); n != 2 {
		t.Fatalf("%d rings after a request within QuietRing, want still 2", n)
	}
	h.now += QuietRing + 1
	h.do(0, OpGet, []byte("d"), nil)
	if n := len(h.rings); n != 3 || h.rings[2].p != 0 {
		t.Fatalf("rings %v: want one more for partition 0 after a quiet spell", h.rings)
	}
	// The request that rang carries FlagRang, so the partition can tell
	// the ringer without looking at every client; the others do not.
	if got := strings.Join(h.srv.rang, ","); got != "a,c,d" {
		t.Fatalf("requests marked FlagRang: %q, want a,c,d (one per ring)", got)
	}
	// tcp's longer quiet spell: a request a QuietRing and more after the
	// last rings only once TCPQuietRing has passed.
	tc := newHarness(t, 1, 8, 1024, EngineConfig{FetchDelayNS: -1, Bells: true, QuietRingNS: QuietRingOf("tcp://127.0.0.1:1")})
	tc.do(0, OpPut, []byte("a"), nil)
	tc.now += 4 * QuietRing
	tc.do(0, OpGet, []byte("a"), nil)
	if n := len(tc.rings); n != 1 {
		t.Fatalf("tcp: %d rings after a request 4 QuietRings after the last, want 1 (the first)", n)
	}
	tc.now += TCPQuietRing + 1
	tc.do(0, OpGet, []byte("a"), nil)
	if n := len(tc.rings); n != 2 {
		t.Fatalf("tcp: %d rings after TCPQuietRing, want 2", n)
	}
	if QuietRingOf("shm:///tmp/x.sock") != QuietRing || IdleBeforeSleepOf("tcp://h:1") != TCPIdleBeforeSleep || TCPIdleBeforeSleep >= ActiveHold {
		t.Fatal("QuietRingOf / IdleBeforeSleepOf: wrong values, or tcp's spin reaches ActiveHold")
	}
	// A fabric without doorbells: no rings at all.
	q := newHarness(t, 1, 8, 1024, EngineConfig{FetchDelayNS: -1})
	q.do(0, OpPut, []byte("a"), nil)
	if len(q.rings) != 0 || q.e.Counters().Rings != 0 {
		t.Fatal("rings without doorbells")
	}
}

// A partition the fabric shows blocked on its bell (EngineConfig.Blocked)
// is rung with the next request to it, marked, however recent the last
// one was; the requests of one step to it share one look and one ring.
func TestEngineRingsBlocked(t *testing.T) {
	blocked := map[int]bool{}
	looks := 0
	h := newHarness(t, 2, 8, 1024, EngineConfig{FetchDelayNS: -1, Bells: true,
		Blocked: func(p int) bool { looks++; return blocked[p] }})
	h.do(0, OpPut, []byte("a"), nil) // rings: the first request
	h.now += QuietRing / 4
	h.do(0, OpGet, []byte("b"), nil) // awake: no ring
	if n := len(h.rings); n != 1 {
		t.Fatalf("%d rings with the partition awake, want 1 (the first request's)", n)
	}
	blocked[0] = true
	h.now += QuietRing / 4
	looks = 0
	h.submit(0, OpGet, []byte("c"), nil)
	h.submit(0, OpGet, []byte("d"), nil)
	h.submit(1, OpGet, []byte("e"), nil) // partition 1's first: rings anyway
	if rings := h.e.Rings(); len(rings) != 2 || rings[0] != 0 || rings[1] != 1 {
		t.Fatalf("rings %v, want partition 0 (blocked) and 1 (its first request)", rings)
	}
	if looks != 1 {
		t.Fatalf("%d looks at partition 0's bell in one step, want 1", looks)
	}
	h.runUntil(func() bool { return h.e.Active() == 0 }, 100, 1e6)
	if got := strings.Join(h.srv.rang, ","); got != "a,c,e" {
		t.Fatalf("requests marked FlagRang: %q, want a,c,e", got)
	}
}

// A reply-mode request unanswered for RingAfter rings its partition too.
func TestEngineReplyWaitRings(t *testing.T) {
	h := newHarness(t, 1, 8, 1024, EngineConfig{Mode: ModeReply, FetchDelayNS: -1, Bells: true})
	h.srv.stalled = true
	slot := h.submit(0, OpPut, []byte("a"), nil)
	h.runUntil(func() bool { return len(h.rings) == 2 }, 1000, RingAfter+2000)
	if at := h.rings[1].at; at < RingAfter {
		t.Fatalf("second ring at %d, before RingAfter", at)
	}
	// The first ring announced the request; the second only reminds (a
	// driver may skip it when it sees the partition awake).
	if h.rings[0].reminder || !h.rings[1].reminder {
		t.Fatalf("rings %+v: want an announcement, then a reminder", h.rings)
	}
	// A reminder queued with a new request's ring announces it.
	h.now += QuietRing + 1
	h.srv.stalled = true
	h.now = h.rings[1].at + 4*RingAfter
	h.e.Tick(h.now)
	if rs := h.e.Rings(); len(rs) != 1 || !h.e.Reminder(0) {
		t.Fatalf("rings %v: want a reminder queued", rs)
	}
	h.submit(0, OpPut, []byte("b"), nil)
	if rs := h.e.Rings(); len(rs) != 1 || h.e.Reminder(0) {
		t.Fatalf("rings %v (reminder %v): a new request's ring is no reminder", rs, h.e.Reminder(0))
	}
	h.srv.stalled = false
	if r := h.result(slot); r.st != StatusOK {
		t.Fatal(r.st)
	}
}

// Hybrid switches to replies after R not-ready READs, and back to
// fetching after ProbeOps replies when fetching pays again.
func TestEngineHybridSwitches(t *testing.T) {
	h := newHarness(t, 1, 8, 1024, EngineConfig{Mode: ModeHybrid, FetchDelayNS: 0, HybridR: 3})
	h.do(0, OpPut, []byte("k"), []byte("v"))
	asked := func() bool { return h.srv.lastFlags()&FlagReply != 0 }
	// A stalled server: READs keep finding nothing.
	slot := h.submit(0, OpGet, []byte("k"), nil)
	h.srv.stalled = true
	h.runUntil(func() bool { return h.e.Counters().NotReady >= 2 }, 100, h.now+1e6)
	if h.e.policy.Reply() {
		t.Fatal("switched to replies before R not-ready READs")
	}
	h.runUntil(func() bool { return h.e.Counters().NotReady >= 3 }, 100, h.now+1e6)
	h.srv.stalled = false
	h.result(slot)
	if asked() {
		t.Fatal("the request that missed asked for a reply")
	}
	slot = h.submit(0, OpGet, []byte("k"), nil)
	h.result(slot)
	if !asked() {
		t.Fatal("no reply asked after R not-ready READs")
	}
	replied := h.e.Counters().Replied
	for i := 0; i < 256; i++ { // the default ProbeOps
		h.do(0, OpGet, []byte("k"), nil)
	}
	if d := h.e.Counters().Replied - replied; d < 200 {
		t.Fatalf("%d of 256 requests replied after switching", d)
	}
	// The probe: fetching again, and it pays (the server is fast now).
	before := h.e.Counters()
	for i := 0; i < 50; i++ {
		h.do(0, OpGet, []byte("k"), nil)
	}
	if d := h.e.Counters().Sub(before); d.Replied != 0 || d.Reads < 50 {
		t.Fatalf("after the probe: %+v, want fetching", d)
	}
}

// Window > 1 over two partitions: every slot in flight at once, each
// result with its own request's value; a full ring refuses more.
func TestEngineWindow(t *testing.T) {
	h := newHarness(t, 2, 8, 1024, EngineConfig{FetchDelayNS: -1, Window: 4})
	want := map[int][]byte{}
	for p := 0; p < 2; p++ {
		for i := 0; i < 4; i++ {
			key := []byte(fmt.Sprintf("p%d-k%d", p, i))
			want[h.submit(p, OpPut, key, key)] = nil
		}
		if h.e.Free(p) {
			t.Fatalf("partition %d free with the window full", p)
		}
		if _, err := h.e.Submit(h.now, p, OpGet, []byte("x"), nil, 0); !errors.Is(err, ErrRingFull) {
			t.Fatalf("submit to a full window: %v", err)
		}
	}
	if h.e.Active() != 8 {
		t.Fatalf("%d active, want 8", h.e.Active())
	}
	h.runUntil(func() bool { return len(h.results) == 8 }, 100, 1e7)
	h.results = map[int]heldResult{}
	for p := 0; p < 2; p++ {
		for i := 0; i < 4; i++ {
			key := []byte(fmt.Sprintf("p%d-k%d", p, i))
			want[h.submit(p, OpGet, key, nil)] = key
		}
	}
	h.runUntil(func() bool { return len(h.results) == 8 }, 100, h.now+1e7)
	for slot, v := range want {
		if v != nil && !bytes.Equal(h.results[slot].val, v) {
			t.Fatalf("slot %d: %q, want %q", slot, h.results[slot].val, v)
		}
	}
}

// A slot is not reused until its result was consumed: its value stays
// intact while the driver copies it.
func TestEngineSlotHeldUntilConsumed(t *testing.T) {
	h := newHarness(t, 1, 1, 1024, EngineConfig{FetchDelayNS: -1})
	h.do(0, OpPut, []byte("k"), []byte("value"))
	h.submit(0, OpGet, []byte("k"), nil)
	for len(h.e.Results()) == 0 {
		if h.now >= h.e.Next() {
			h.e.Tick(h.now)
		}
		h.post()
		for i := range h.inflight {
			h.apply(i)
		}
		h.srv.serve()
		for _, op := range h.inflight {
			h.e.Complete(h.now, fabric.Completion{ID: op.ID, Kind: op.Kind})
		}
		h.inflight, h.applied = h.inflight[:0], h.applied[:0]
		h.now += 100
	}
	if h.e.Free(0) {
		t.Fatal("slot free while its result is unconsumed")
	}
	if _, err := h.e.Submit(h.now, 0, OpGet, []byte("k"), nil, 0); !errors.Is(err, ErrRingFull) {
		t.Fatalf("submit over an unconsumed result: %v", err)
	}
	if v := h.e.Results()[0].Value; string(v) != "value" {
		t.Fatalf("result %q", v)
	}
	h.e.Consumed()
	if !h.e.Free(0) {
		t.Fatal("slot not free after Consumed")
	}
}

// An error completion fails the engine; nothing more is accepted.
func TestEngineFailsOnErrorCompletion(t *testing.T) {
	h := newHarness(t, 1, 8, 1024, EngineConfig{FetchDelayNS: -1})
	h.submit(0, OpGet, []byte("k"), nil)
	h.post()
	err := h.e.Complete(h.now, fabric.Completion{ID: h.inflight[0].ID, Kind: fabric.OpWrite, Err: fabric.ErrPeerGone})
	if !errors.Is(err, fabric.ErrPeerGone) || !errors.Is(h.e.Err(), fabric.ErrPeerGone) {
		t.Fatalf("error completion: %v, engine %v", err, h.e.Err())
	}
	if _, err := h.e.Submit(h.now, 0, OpGet, []byte("k"), nil, 0); !errors.Is(err, fabric.ErrPeerGone) {
		t.Fatalf("submit after failure: %v", err)
	}
}

func TestNewEngineChecks(t *testing.T) {
	l, _ := NewLayout(1, 8, 1024, 0, 0)
	w := Welcome{Layout: l}
	small := fabric.NewRegion(make([]byte, l.Size()-1), fabric.Desc{}, 0, nil)
	if _, err := NewEngine(small, w, EngineConfig{}); err == nil {
		t.Fatal("accepted a local region smaller than the layout")
	}
	ok := fabric.NewRegion(make([]byte, l.Size()), fabric.Desc{}, 0, nil)
	if _, err := NewEngine(ok, w, EngineConfig{RFS: MinRFS - 1}); err == nil {
		t.Fatal("accepted an RFS below MinRFS")
	}
	if _, err := NewEngine(ok, w, EngineConfig{RFS: l.callResv() + 1}); err == nil {
		t.Fatal("accepted an RFS over a request's response reservation")
	}
}

// Where a READ is a copy (shm), the first READ goes with the request's
// WRITE, a miss is READ again at the very next step, and the delay never
// grows: latency is all a READ costs there.
func TestEngineCopyReads(t *testing.T) {
	h := newHarness(t, 1, 8, 1024, EngineConfig{Mode: ModeRFP, FetchDelayNS: -1, CopyReads: true})
	h.do(0, OpPut, []byte("k"), []byte("v"))
	if d := h.e.FetchDelayNS(); d != 0 {
		t.Fatalf("fetch delay %d ns, want 0", d)
	}
	h.srv.stalled = true
	h.submit(0, OpGet, []byte("k"), nil)
	h.step()
	var kinds []fabric.OpKind
	for _, op := range h.posts[len(h.posts)-1] {
		kinds = append(kinds, op.Kind)
	}
	if len(kinds) != 2 || kinds[0] != fabric.OpWrite || kinds[1] != fabric.OpRead {
		t.Fatalf("first post %v: want the WRITE and a READ", kinds)
	}
	for i := range 5 {
		h.now += 10 // a step later, the server still behind
		h.step()
		if next := h.e.Next(); next > h.now {
			t.Fatalf("after miss %d the next READ is due %d ns later", i+1, next-h.now)
		}
	}
	h.srv.stalled = false
	h.runUntil(func() bool { return h.e.Active() == 0 }, 100, h.now+1e6)
	if d := h.e.FetchDelayNS(); d != 0 {
		t.Fatalf("fetch delay grew to %d ns", d)
	}
}

package rfp

import (
	"bytes"
	"testing"

	"github.com/jakiro-kv/jakiro/fabric"
)

// A pure in-memory setting for unit tests of the Engine: the server's
// grant is a byte slice, a fake fabric applies the engine's WRITEs and
// READs to it when and how a test says (whole, torn, late), a tiny fake
// server answers request slots, and the clock is a number.

// fakeServer answers the requests in a grant the way a partition does: in
// ring order per partition, response header last.
type fakeServer struct {
	l       Layout
	grant   []byte
	local   []byte // the client's region, where replies go
	next    []uint32
	store   map[string][]byte
	stalled bool
	served  int
	rang    []string // keys of the served requests marked FlagRang, in order
	// replyLate holds reply WRITEs back until flushReplies.
	replyLate bool
	replies   []fabric.Op
}

func newFakeServer(l Layout, local []byte) *fakeServer {
	s := &fakeServer{l: l, grant: make([]byte, l.Size()), local: local,
		next: make([]uint32, l.Partitions), store: map[string][]byte{}}
	for p := range s.next {
		s.next[p] = 1
	}
	return s
}

// serve answers every request that is ready, unless stalled.
func (s *fakeServer) serve() {
	if s.stalled {
		return
	}
	for p := range s.next {
		for s.serveOne(p) {
		}
	}
}

func (s *fakeServer) serveOne(p int) bool {
	l := s.l
	seq := s.next[p]
	sl := SlotOf(seq, l.Slots)
	off := l.ReqOff(p, sl)
	var r Request
	if ParseRequest(s.grant[off:off+l.ReqSlot], seq, l.MaxValue, &r) != SlotReady {
		return false
	}
	ro := l.RespOff(p, sl)
	slot := s.grant[ro : ro+l.RespSlot]
	st, n := StatusOK, 0
	switch r.Op {
	case OpGet:
		v, ok := s.store[string(r.Key)]
		if !ok {
			st = StatusNotFound
		}
		n = copy(ResponseValue(slot), v)
	case OpPut:
		s.store[string(r.Key)] = bytes.Clone(r.Value)
	case OpDelete:
		if _, ok := s.store[string(r.Key)]; !ok {
			st = StatusNotFound
		}
		delete(s.store, string(r.Key))
	default:
		st = StatusBadRequest
	}
	if r.Flags&FlagRang != 0 {
		s.rang = append(s.rang, string(r.Key))
	}
	size := SealResponse(slot, seq, st, n)
	if r.Flags&FlagReply != 0 {
		op := fabric.Op{Kind: fabric.OpWrite, LocalOff: ro, Len: size, RemoteOff: uint64(ro)}
		if s.replyLate {
			s.replies = append(s.replies, op)
		} else {
			copy(s.local[ro:ro+size], s.grant[ro:ro+size])
		}
	}
	s.next[p]++
	s.served++
	return true
}

func (s *fakeServer) flushReplies() {
	for _, op := range s.replies {
		copy(s.local[op.LocalOff:op.LocalOff+op.Len], s.grant[op.RemoteOff:int(op.RemoteOff)+op.Len])
	}
	s.replies = s.replies[:0]
}

// harness drives an Engine the way client/conn does, over the fake fabric.
type harness struct {
	t        *testing.T
	e        *Engine
	l        Layout
	local    *fabric.Region
	srv      *fakeServer
	now      int64
	inflight []fabric.Op // posted, not completed, data not yet applied
	applied  []bool      // per inflight op: its bytes already moved
	posts    [][]fabric.Op
	rings    []ringEvent
	results  map[int]heldResult // by slot, until the test takes them
	order    []int              // slots in the order their results came
	// tear, when set, decides how a READ's bytes land: it returns how many
	// leading bytes arrive now (the rest stays as it was).
	tear func(op fabric.Op) int
}

type ringEvent struct {
	at       int64
	p        int
	reminder bool // Engine.Reminder: announces no new request
}

type heldResult struct {
	st  Status
	val []byte
}

const testGrantKey = 7

func newHarness(t *testing.T, partitions, slots, maxValue int, cfg EngineConfig) *harness {
	t.Helper()
	l, err := NewLayout(partitions, slots, maxValue)
	if err != nil {
		t.Fatal(err)
	}
	mem := make([]byte, l.Size())
	local := fabric.NewRegion(mem, fabric.Desc{Addr: 0, Len: uint64(len(mem)), Key: 1}, 0, nil)
	w := Welcome{Layout: l, Grant: fabric.Desc{Len: uint64(l.Size()), Key: testGrantKey}, ClientID: 1}
	e, err := NewEngine(local, w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, e: e, l: l, local: local, srv: newFakeServer(l, mem), results: map[int]heldResult{}}
}

// submit sends a request on partition p and returns its slot.
func (h *harness) submit(p int, op Op, key, value []byte) int {
	h.t.Helper()
	slot, err := h.e.Submit(h.now, p, op, key, value, 0)
	if err != nil {
		h.t.Fatalf("submit: %v", err)
	}
	return slot
}

// post takes what the engine wants posted and rung, as a driver does.
func (h *harness) post() {
	if ops := h.e.Pending(); len(ops) > 0 {
		for _, op := range ops {
			if op.Remote.Key != testGrantKey || op.Local != h.local {
				h.t.Fatalf("op %+v outside the grant or local region", op)
			}
		}
		h.posts = append(h.posts, append([]fabric.Op(nil), ops...))
		h.inflight = append(h.inflight, ops...)
		h.applied = append(h.applied, make([]bool, len(ops))...)
		h.e.Posted()
	}
	for _, p := range h.e.Rings() {
		h.rings = append(h.rings, ringEvent{h.now, p, h.e.Reminder(p)})
	}
	h.e.Rang()
}

// apply moves op i's bytes (a READ torn as h.tear says).
func (h *harness) apply(i int) {
	op := h.inflight[i]
	if h.applied[i] {
		return
	}
	h.applied[i] = true
	mem := h.local.Bytes()
	lo, ro := op.LocalOff, int(op.RemoteOff)
	switch op.Kind {
	case fabric.OpWrite:
		copy(h.srv.grant[ro:ro+op.Len], mem[lo:lo+op.Len])
	case fabric.OpRead:
		n := op.Len
		if h.tear != nil {
			n = h.tear(op)
		}
		copy(mem[lo:lo+n], h.srv.grant[ro:ro+n])
	}
}

// complete applies what is still unapplied and completes every op in
// flight, in posting order (as every fabric does), then takes results.
func (h *harness) complete() {
	for i := range h.inflight {
		h.apply(i)
		id := h.inflight[i].ID
		if err := h.e.Complete(h.now, fabric.Completion{ID: id, Kind: h.inflight[i].Kind}); err != nil {
			h.t.Fatalf("complete: %v", err)
		}
	}
	h.inflight, h.applied = h.inflight[:0], h.applied[:0]
	h.take()
}

func (h *harness) take() {
	for _, r := range h.e.Results() {
		if _, dup := h.results[r.Slot]; dup {
			h.t.Fatalf("slot %d reported twice", r.Slot)
		}
		h.results[r.Slot] = heldResult{r.Status, bytes.Clone(r.Value)}
		h.order = append(h.order, r.Slot)
	}
	h.e.Consumed()
}

// step is one driver iteration at the current time: tick if due, post,
// let the fabric move the bytes and the server run, complete.
func (h *harness) step() {
	if h.now >= h.e.Next() {
		h.e.Tick(h.now)
	}
	h.post()
	for i := range h.inflight {
		if h.inflight[i].Kind == fabric.OpWrite {
			h.apply(i)
		}
	}
	h.srv.serve()
	h.complete()
}

// runUntil steps, advancing the clock by dt each time (or straight to the
// engine's next deadline when nothing else can happen sooner), until done
// or the clock passes limit.
func (h *harness) runUntil(done func() bool, dt, limit int64) {
	h.t.Helper()
	for !done() {
		if h.now > limit {
			h.t.Fatalf("not done by %d ns: counters %+v", limit, h.e.Counters())
		}
		h.step()
		h.now += dt
		if next := h.e.Next(); next > h.now && next != Never && h.srv.stalled {
			h.now = next // a stalled server: jump to what the engine waits for
		}
	}
}

// result waits for slot's result.
func (h *harness) result(slot int) heldResult {
	h.t.Helper()
	h.runUntil(func() bool { _, ok := h.results[slot]; return ok }, 100, h.now+int64(10e9))
	r := h.results[slot]
	delete(h.results, slot)
	return r
}

// do runs one request to completion.
func (h *harness) do(p int, op Op, key, value []byte) heldResult {
	h.t.Helper()
	return h.result(h.submit(p, op, key, value))
}

package rfp

import (
	"bytes"
	"errors"
	"testing"

	"github.com/jakiro-kv/jakiro/fabric"
)

// A pure in-memory setting for unit tests of the Engine: the server's
// grant is a byte slice, a fake fabric applies the engine's WRITEs and
// READs to it when and how a test says (whole, torn, late), the server is
// a real Session (its rings, parts, pieces and reply spans) over a fake
// connection that lands its reply WRITEs in the client's local region, and
// the clock is a number.

// replyConn is the server side's fabric.Conn: Post lands reply WRITEs in
// the client's region at once, or holds them (as bytes taken at Post
// time) until flushReplies when the test says so.
type replyConn struct {
	local  []byte // the client's region
	late   bool
	held   []heldWrite
	comps  int
	done   chan struct{}
	posted int
}

type heldWrite struct {
	op   fabric.Op
	data []byte
}

func (c *replyConn) Alloc(int) (*fabric.Region, error) { return nil, errors.New("no alloc") }
func (c *replyConn) PeerData() []byte                  { return nil }
func (c *replyConn) Done() <-chan struct{}             { return c.done }
func (c *replyConn) Err() error                        { return nil }
func (c *replyConn) Close() error                      { return nil }

func (c *replyConn) Post(ops []fabric.Op) error {
	for _, op := range ops {
		if op.Kind != fabric.OpWrite {
			return errors.New("replyConn: only WRITEs")
		}
		src := op.Local.Bytes()[op.LocalOff : op.LocalOff+op.Len]
		w := heldWrite{op, bytes.Clone(src)}
		if c.late {
			c.held = append(c.held, w)
		} else {
			copy(c.local[op.RemoteOff:], w.data)
		}
		c.posted++
	}
	c.comps += len(ops)
	return nil
}

func (c *replyConn) Poll(cs []fabric.Completion) (int, error) {
	n := min(len(cs), c.comps)
	for i := range cs[:n] {
		cs[i] = fabric.Completion{Kind: fabric.OpWrite}
	}
	c.comps -= n
	return n, nil
}

// fakeServer answers the requests in a grant the way a partition does,
// with a real Session: Poll (which serves parts and pieces), Respond in
// order, FlushReplies after each batch.
type fakeServer struct {
	t       *testing.T
	l       Layout
	grant   []byte
	sess    *Session
	conn    *replyConn
	now     int64
	store   map[string][]byte
	stalled bool
	served  int      // callers' requests answered
	rang    []string // keys of the served requests marked FlagRang, in order
	flags   []uint8  // flags of the served requests, in order
	batch   []Request
}

func newFakeServer(t *testing.T, l Layout, local []byte) *fakeServer {
	grant := make([]byte, l.Size())
	// The client's control block: where replies go.
	PutControl(grant, fabric.Desc{Len: uint64(len(local)), Key: 1})
	conn := &replyConn{local: local, done: make(chan struct{})}
	region := fabric.NewRegion(grant, fabric.Desc{Len: uint64(len(grant)), Key: testGrantKey}, 0, nil)
	s := &fakeServer{t: t, l: l, grant: grant, conn: conn, store: map[string][]byte{},
		sess:  newSession(1, conn, region, l, DefaultReplyTimeout, newLongBudget(DefaultLongBudget), nil),
		batch: make([]Request, 4)}
	return s
}

// serve answers every request that is ready, unless stalled.
func (s *fakeServer) serve() {
	if s.stalled {
		return
	}
	for p := 0; p < s.l.Partitions; p++ {
		for {
			n := s.sess.PollBatch(p, s.now, s.batch)
			if err := s.sess.Broken(p); err != nil {
				s.t.Fatalf("the honest engine broke the ring: %v", err)
			}
			if n == 0 {
				break
			}
			for i := range s.batch[:n] {
				s.answer(p, &s.batch[i])
			}
		}
		if _, err := s.sess.FlushReplies(p); err != nil {
			s.t.Fatalf("FlushReplies: %v", err)
		}
	}
}

func (s *fakeServer) answer(p int, r *Request) {
	st := StatusOK
	var val []byte
	switch r.Op {
	case OpGet:
		v, ok := s.store[string(r.Key)]
		if !ok {
			st = StatusNotFound
		}
		val = v
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
	s.flags = append(s.flags, r.Flags)
	if err := s.sess.Respond(p, r, st, val); err != nil {
		s.t.Fatalf("Respond: %v", err)
	}
	s.served++
}

// lastFlags are the flags of the last request served.
func (s *fakeServer) lastFlags() uint8 { return s.flags[len(s.flags)-1] }

// flushReplies lands the reply WRITEs held back.
func (s *fakeServer) flushReplies() {
	for _, w := range s.conn.held {
		copy(s.conn.local[w.op.RemoteOff:], w.data)
	}
	s.conn.held = s.conn.held[:0]
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
	results  map[int]heldResult // by slot, until the test takes them or the slot is reused
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
	return newHarnessRings(t, partitions, slots, maxValue, 0, 0, cfg)
}

// newHarnessRings is newHarness with ring sizes (0: the defaults).
func newHarnessRings(t *testing.T, partitions, slots, maxValue, reqRing, respRing int, cfg EngineConfig) *harness {
	t.Helper()
	l, err := NewLayout(partitions, slots, maxValue, reqRing, respRing)
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
	return &harness{t: t, e: e, l: l, local: local, srv: newFakeServer(t, l, mem), results: map[int]heldResult{}}
}

// submit sends a request on partition p and returns its slot.
func (h *harness) submit(p int, op Op, key, value []byte) int {
	h.t.Helper()
	slot, err := h.e.Submit(h.now, p, op, key, value, 0)
	if err != nil {
		h.t.Fatalf("submit: %v", err)
	}
	// Result.Slot is a call index, reused once consumed: a result the
	// test left untaken belongs to an earlier request.
	delete(h.results, slot)
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
		h.take() // consumed before the next post, as Results asks
	}
	h.post()
	for i := range h.inflight {
		if h.inflight[i].Kind == fabric.OpWrite {
			h.apply(i)
		}
	}
	h.srv.now = h.now
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
			for p := range h.e.parts {
				ps := &h.e.parts[p]
				h.t.Logf("partition %d: %+v", p, *ps)
				for i := 0; i < ps.qn; i++ {
					h.t.Logf("  rec %+v", *ps.at(i))
				}
				h.t.Logf("  session %+v", h.srv.sess.rings[p])
			}
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

package rfp

// partState is the engine's view of one partition's rings.
type partState struct {
	nextSeq uint32
	// q holds the records in flight in sequence order (a circular queue):
	// the partition answers them in this order.
	q      []rec
	qh, qn int
	// calls in flight and free call entries (Result.Slot values).
	calls     int
	freeCalls []int32
	reply     bool // the mode of the records in flight

	// Request ring: records are put at wpos; [sentTo, wpos) is not in a
	// WRITE yet; the ring's bytes before the oldest record in flight are
	// free (the server answered them).
	wpos, sentTo uint64
	dirty        bool

	// Response ring: rpos is where the oldest record's response starts;
	// resv the response bytes reserved by records in flight and results
	// not yet consumed. A fetch reads [fetchFrom, readEnd) (fetchFrom >
	// rpos when the oldest response was fetched in part).
	rpos      uint64
	fetchFrom uint64
	readEnd   uint64
	readAt    int64 // when the READ in flight was posted
	resv      int
	reading   int // READs in flight
	shortNeed int // bytes of the oldest response, where a fetch brought part of it

	// A long request under way: its call, op, TTL, key and value, and how
	// much of the value went out in parts; long < 0 when none.
	long     int32
	longOp   Op
	longTTL  uint32
	longKey  []byte
	longVal  []byte
	longSent int

	// Long responses gathering pieces, oldest first, and the piece
	// requests in flight.
	asmQ      []int32
	piecesOut int
}

// maxInternal bounds the parts and piece requests in flight beside the
// window's calls.
const maxInternal = 4

func (ps *partState) init(p int, l Layout) {
	ps.nextSeq = 1 // zeroed memory holds sequence 0
	ps.q = make([]rec, l.Slots+maxInternal)
	ps.freeCalls = make([]int32, 0, l.Slots)
	for i := l.Slots - 1; i >= 0; i-- {
		ps.freeCalls = append(ps.freeCalls, int32(p*l.Slots+i))
	}
	ps.long = -1
}

// tail is the queue's next free place; the record made there is queued
// once qn counts it.
func (ps *partState) tail() *rec { return &ps.q[(ps.qh+ps.qn)%len(ps.q)] }

func (ps *partState) head() *rec { return &ps.q[ps.qh] }

func (ps *partState) at(i int) *rec { return &ps.q[(ps.qh+i)%len(ps.q)] }

func (ps *partState) pop() {
	ps.q[ps.qh] = rec{}
	ps.qh = (ps.qh + 1) % len(ps.q)
	ps.qn--
}

// reqRoom says a record of up to n bytes fits the request ring now,
// wherever the ring's end falls.
func (ps *partState) reqRoom(l Layout, n int) bool {
	oldest := ps.wpos
	if ps.qn > 0 {
		oldest = ps.head().start
	}
	return int(ps.wpos-oldest)+2*n <= l.ReqRing
}

// respRoom says n more response bytes may be reserved: the reservations,
// and the waste of one wrap (at most the longest record, waste), stay
// within the response ring.
func (ps *partState) respRoom(l Layout, n, waste int) bool {
	return ps.resv+n+waste <= l.RespRing
}

// modeOK says a record in mode reply may join the records in flight:
// a partition's records in flight are all fetched or all replied to, so
// a READ never lands over a reply.
func (ps *partState) modeOK(reply bool) bool {
	return ps.qn == 0 && ps.reading == 0 || ps.reply == reply
}

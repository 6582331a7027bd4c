package rfp

import "fmt"

const (
	// ControlSize is the control block at the start of a grant: the client
	// writes the descriptor of its local region there (see Control).
	ControlSize = 64
	ringAlign   = 64
	// DefaultSlots is the paper's 8 requests in flight per client and
	// partition: the deepest window a client may keep by default.
	DefaultSlots = 8
	// MaxSlots bounds the window (requests in flight per partition).
	MaxSlots = 128
	// MaxPartitions bounds the partitions a server may grant rings for.
	MaxPartitions = 256
	// DefaultRequestRing and DefaultResponseRing are the ring sizes per
	// client and partition: 48 KiB of grant carries a window of 8 values
	// of up to 2 KiB inline; larger values travel in pieces.
	DefaultRequestRing  = 16 << 10
	DefaultResponseRing = 32 << 10
	// MinRing and MaxRing bound a ring's size.
	MinRing = 2 << 10
	MaxRing = 16 << 20
)

// Layout is the geometry of a grant: a control block, then for each
// partition a request ring (ReqRing bytes, written by the client) and a
// response ring (RespRing bytes, written by the server), both rings of
// variable-length records (record.go). Slots bounds the requests in flight
// per partition; MaxValue is the server's largest value, which rings need
// not hold: a longer record travels in pieces. The client's local region
// has the same geometry.
type Layout struct {
	Partitions int
	Slots      int
	MaxValue   int
	ReqRing    int
	RespRing   int
}

// NewLayout checks and builds a layout; zero ring sizes take the defaults.
func NewLayout(partitions, slots, maxValue, reqRing, respRing int) (Layout, error) {
	if reqRing == 0 {
		reqRing = DefaultRequestRing
	}
	if respRing == 0 {
		respRing = DefaultResponseRing
	}
	l := Layout{Partitions: partitions, Slots: slots, MaxValue: maxValue, ReqRing: reqRing, RespRing: respRing}
	return l, l.Validate()
}

// Validate checks a layout, such as one a peer sent, for sanity.
func (l Layout) Validate() error {
	switch {
	case l.Partitions < 1 || l.Partitions > MaxPartitions:
		return fmt.Errorf("rfp: partitions %d outside 1..%d", l.Partitions, MaxPartitions)
	case l.Slots < 1 || l.Slots > MaxSlots:
		return fmt.Errorf("rfp: slots %d outside 1..%d", l.Slots, MaxSlots)
	case l.MaxValue < 0 || l.MaxValue > MaxValueLen:
		return fmt.Errorf("rfp: max value %d outside 0..%d", l.MaxValue, MaxValueLen)
	case l.ReqRing < MinRing || l.ReqRing > MaxRing || l.ReqRing%ringAlign != 0:
		return fmt.Errorf("rfp: request ring %d B outside %d..%d or not a multiple of %d", l.ReqRing, MinRing, MaxRing, ringAlign)
	case l.RespRing < MinRing || l.RespRing > MaxRing || l.RespRing%ringAlign != 0:
		return fmt.Errorf("rfp: response ring %d B outside %d..%d or not a multiple of %d", l.RespRing, MinRing, MaxRing, ringAlign)
	case l.RespRing/(2*l.Slots) < minRespBudgetRec:
		return fmt.Errorf("rfp: response ring %d B too small for %d slots (want at least %d B)", l.RespRing, l.Slots, 2*l.Slots*minRespBudgetRec)
	}
	return nil
}

// Size is the bytes of a region with this layout.
func (l Layout) Size() int {
	return ControlSize + l.Partitions*(l.ReqRing+l.RespRing)
}

// ReqBase is the offset of partition p's request ring.
func (l Layout) ReqBase(p int) int { return ControlSize + p*(l.ReqRing+l.RespRing) }

// RespBase is the offset of partition p's response ring.
func (l Layout) RespBase(p int) int { return l.ReqBase(p) + l.ReqRing }

// Response reservations. A client keeps the response bytes that the
// records it has in flight may take, plus one record's worth of wrap
// waste, within the response ring, so the server can never overwrite a
// response the client has not taken: a request in the window reserves
// RespRing/(2*Slots) bytes, at most RespRing/8 (its budget is what fits
// there), the one piece request of a long response in flight RespRing/4,
// and RespRing/4 stay for the waste at the ring's end.

// minRespBudgetRec is the smallest reservation: a record of one cache
// line (a value of up to 52 B).
const minRespBudgetRec = recAlign

// callResv is the response bytes one request in the window reserves.
func (l Layout) callResv() int { return min(l.RespRing/(2*l.Slots), l.RespRing/8) &^ (recAlign - 1) }

// CallBudget is the longest response value a request in the window
// carries inline; a longer one comes in pieces.
func (l Layout) CallBudget() int { return l.callResv() - respHeader - sumSize }

// pieceResv is what a piece request reserves (one at a time).
func (l Layout) pieceResv() int { return l.RespRing / 4 &^ (recAlign - 1) }

// pieceBudget is the payload of one piece of a long response.
func (l Layout) pieceBudget() int { return l.pieceResv() - respHeader - sumSize }

// maxReqRecord is the longest request record; a longer request is sent in
// parts of at most this size.
func (l Layout) maxReqRecord() int { return l.ReqRing / 4 &^ (recAlign - 1) }

// RFSFor is the remote fetch size that brings a value of n bytes back in
// one READ: its response record.
func RFSFor(n int) int { return respRecLen(n) }

// MinRFS is the smallest useful RFS: the header and checksum of an empty
// value's record.
const MinRFS = 16

// ringOff is position pos's offset in a ring of ring bytes: a mask where
// the ring is a power of two, as the defaults are (a 64-bit division
// costs tens of cycles on a partition's every poll).
func ringOff(pos uint64, ring int) int {
	if ring&(ring-1) == 0 {
		return int(pos & uint64(ring-1))
	}
	return int(pos % uint64(ring))
}

package rfp

import "fmt"

const (
	// ControlSize is the control block at the start of a grant: the client
	// writes the descriptor of its local region there (see Control).
	ControlSize = 64
	slotAlign   = 64
	reqHeader   = 16
	respHeader  = 4
	sumSize     = 4
	// DefaultSlots is the paper's 8 response buffers per client.
	DefaultSlots = 8
	// MaxSlots keeps the 8-bit response sequence unambiguous.
	MaxSlots = 128
	// MaxPartitions bounds the partitions a server may grant rings for.
	MaxPartitions = 256
)

// Layout is the geometry of a grant: for each partition a request ring and
// a response ring of Slots slots. The client's local region has the same
// geometry.
type Layout struct {
	Partitions int
	Slots      int
	MaxValue   int // largest value a slot holds
	ReqSlot    int // bytes per request slot
	RespSlot   int // bytes per response slot
}

func align(n, a int) int { return (n + a - 1) / a * a }

// NewLayout sizes slots for keys up to MaxKeyLen and values up to maxValue.
func NewLayout(partitions, slots, maxValue int) (Layout, error) {
	l := Layout{Partitions: partitions, Slots: slots, MaxValue: maxValue}
	l.ReqSlot = align(reqHeader+MaxKeyLen+maxValue+sumSize, slotAlign)
	l.RespSlot = align(respHeader+maxValue+sumSize, slotAlign)
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
	// Slots no larger than the max value needs: a peer's layout must not
	// make the other side allocate more than the protocol can use.
	case l.ReqSlot < reqHeader+MaxKeyLen+l.MaxValue+sumSize || l.ReqSlot%slotAlign != 0 ||
		l.ReqSlot > align(reqHeader+MaxKeyLen+l.MaxValue+sumSize, slotAlign):
		return fmt.Errorf("rfp: request slot %d wrong size or unaligned for max value %d", l.ReqSlot, l.MaxValue)
	case l.RespSlot < respHeader+l.MaxValue+sumSize || l.RespSlot%slotAlign != 0 ||
		l.RespSlot > align(respHeader+l.MaxValue+sumSize, slotAlign):
		return fmt.Errorf("rfp: response slot %d wrong size or unaligned for max value %d", l.RespSlot, l.MaxValue)
	}
	return nil
}

// ringBytes is one partition's request ring plus response ring.
func (l Layout) ringBytes() int { return l.Slots * (l.ReqSlot + l.RespSlot) }

// Size is the bytes of a region with this layout.
func (l Layout) Size() int { return ControlSize + l.Partitions*l.ringBytes() }

// ReqOff is the offset of request slot s of partition p.
func (l Layout) ReqOff(p, s int) int { return ControlSize + p*l.ringBytes() + s*l.ReqSlot }

// RespOff is the offset of response slot s of partition p.
func (l Layout) RespOff(p, s int) int {
	return ControlSize + p*l.ringBytes() + l.Slots*l.ReqSlot + s*l.RespSlot
}

// RFSFor is the remote fetch size that brings a value of n bytes back in
// one READ.
func RFSFor(n int) int { return respHeader + n + sumSize }

// MinRFS is the smallest useful RFS: header and checksum of an empty value.
const MinRFS = respHeader + sumSize

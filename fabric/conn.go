package fabric

import (
	"context"
	"fmt"
)

// Handshake private data limits, those of RC connection management
// (rdma_cm over IB/RoCE): every provider enforces them, so a protocol that
// works on one works on all.
const (
	MaxDialData   = 56
	MaxAcceptData = 192
)

// Setup is a connection whose protection domain exists and whose
// handshake is not done yet.
type Setup interface {
	// Alloc registers a new zeroed off-heap region of size bytes in this
	// connection's protection domain.
	Alloc(size int) (*Region, error)
	// PeerData is the dialer's private data on the accepting side; nil on
	// the dialing side.
	PeerData() []byte
	// Establish completes the handshake, sending data as private data.
	// The dialer's Conn.PeerData is then the acceptor's data.
	Establish(ctx context.Context, data []byte) (Conn, error)
	// Close abandons the setup (the acceptor's way to reject) and frees
	// its regions. After a successful Establish it is a no-op.
	Close() error
}

// Conn is an established reliable connection.
type Conn interface {
	// Alloc registers another region in this connection's domain.
	Alloc(size int) (*Region, error)
	// PeerData is the private data the peer sent in the handshake.
	PeerData() []byte
	// Post posts ops in order; each produces one Completion. On error
	// nothing of the batch was posted.
	Post(ops []Op) error
	// Poll stores up to len(cs) completions in cs without blocking and
	// returns how many it stored. An error means the connection is dead.
	Poll(cs []Completion) (int, error)
	// Done is closed when the connection ends (either side closed, or the
	// peer died); Err then says why.
	Done() <-chan struct{}
	Err() error
	// Close ends the connection and frees its regions.
	Close() error
}

// Listener accepts connections.
type Listener interface {
	// Accept waits for a dialer's handshake and returns its Setup.
	Accept(ctx context.Context) (Setup, error)
	// Addr is the URL dialers use to reach this listener.
	Addr() string
	Close() error
}

// CheckPrivateData is the Establish check every provider makes: data must
// fit the handshake of its side (dialer or acceptor).
func CheckPrivateData(data []byte, dialer bool) error {
	limit := MaxAcceptData
	if dialer {
		limit = MaxDialData
	}
	if len(data) > limit {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrPrivateData, len(data), limit)
	}
	return nil
}

// Pumper is implemented by software fabrics whose NIC is a host thread
// (tcp): Pump applies, on the caller's thread and without waiting, what
// the peer has sent so far (its WRITEs land in our regions). A target
// that busy-polls its memory for a peer's WRITEs calls it while it waits,
// so a WRITE lands without the provider's thread being woken and
// scheduled first. It does nothing where another thread is reading.
// While a connection is pumped the fabric's own thread may leave it to the
// pumper; Release says the pumping stops (the caller goes idle), so the
// fabric's thread serves it again at once. A Pump that applies a WRITE
// may hold a READ the peer sent right behind it until the next Pump (the
// caller looks at its memory in between, so a READ that follows a request
// finds the request's answer): a caller that pumps must Pump again soon
// or Release.
type Pumper interface {
	Pump()
	Release()
}

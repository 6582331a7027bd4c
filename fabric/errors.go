package fabric

import "errors"

var (
	// ErrRemoteAccess: the operation reached outside a remote region or
	// named a key the peer did not grant on this connection.
	ErrRemoteAccess = errors.New("fabric: remote access error")
	// ErrLocalAccess: the operation reached outside its local region, or the
	// region is closed or belongs to another connection.
	ErrLocalAccess = errors.New("fabric: local access error")
	// ErrPeerGone: the peer closed the connection or died.
	ErrPeerGone = errors.New("fabric: peer gone")
	// ErrClosed: this side closed the connection or listener.
	ErrClosed = errors.New("fabric: closed")
	// ErrQueueFull: more operations outstanding than Options.QueueDepth.
	ErrQueueFull = errors.New("fabric: send queue full")
	// ErrPrivateData: private data longer than the handshake carries.
	ErrPrivateData = errors.New("fabric: private data too long")
	// ErrRejected: the acceptor closed the Setup instead of establishing it.
	ErrRejected = errors.New("fabric: connection rejected")
	// ErrNoMemory: the domain cannot hold another region of that size.
	ErrNoMemory = errors.New("fabric: out of registered memory")
)

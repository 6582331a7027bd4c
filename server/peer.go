package server

import (
	"sync"
	"sync/atomic"

	"github.com/jakiro-kv/jakiro/rfp"
)

// peer is the server's side of one client: its rfp session, what each
// partition knows of it, and why the server gave it up, if it did.
type peer struct {
	sess  *rfp.Session
	parts []peerPart // parts[p] is touched only by partition p's goroutine
	src   int        // sess.BellSource: the name its rings carry, -1: none

	gone atomic.Bool // unpublished: partitions drop it from their polled sets
	dead atomic.Bool // given up (failed): partitions stop serving it

	failOnce sync.Once
	failed   chan struct{} // closed by fail
	failErr  error

	// unwatch stops the function that hands the peer to the reaper when
	// its connection ends (Server.watch); true: it will not run, and the
	// caller owns its count in Server.watchers.
	unwatch func() bool
	onFail  func() // the server's: hands a failed peer to the reaper
}

// peerPart is one partition's view of a peer.
type peerPart struct {
	lastReq int64  // partition clock when the partition last found a request
	polled  bool   // in the partition's polled set
	empty   uint32 // empty polls in a row (a Pump every pumpEvery-th)
	warm    bool   // in its warm set
	_       [48]byte
}

func newPeer(sess *rfp.Session, partitions int) *peer {
	return &peer{sess: sess, parts: make([]peerPart, partitions), src: sess.BellSource(), failed: make(chan struct{})}
}

// fail gives the peer up: partitions stop serving it at once and the
// server closes its connection once every partition has moved past it.
func (c *peer) fail(err error) {
	c.failOnce.Do(func() {
		c.failErr = err
		c.dead.Store(true)
		close(c.failed)
		if c.onFail != nil {
			c.onFail()
		}
	})
}

// stopWatch stops its watch (see unwatch); true: it will not run.
func (c *peer) stopWatch() bool { return c.unwatch != nil && c.unwatch() }

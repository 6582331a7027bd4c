package fabrictest

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// testPeerClose closes one end and checks both: the closer reports
// ErrClosed, the peer sees Done closed promptly with ErrPeerGone, ops on
// either end fail rather than hang, and fabric.AfterDone functions run
// on both ends (those stopped in time never do).
func testPeerClose(t *testing.T, newAddr func(*testing.T) string) {
	ln := listen(t, newAddr, fabric.Options{})
	for _, closer := range []string{"Dialer", "Acceptor"} {
		t.Run(closer+"Closes", func(t *testing.T) {
			p := connect(t, ln, fabric.Options{}, 4096, 4096)
			c, peer := p.D, p.A
			peerReg, peerRemote := p.AReg, p.ToD
			if closer == "Acceptor" {
				c, peer = p.A, p.D
				peerReg, peerRemote = p.DReg, p.ToA
			}
			select {
			case <-peer.Done():
				t.Fatalf("Done closed before anything happened (Err %v)", peer.Err())
			default:
			}
			if err := peer.Err(); err != nil {
				t.Fatalf("Err on a live connection: %v", err)
			}
			if err := execOK(peer, read(peerReg, 0, peerRemote, 0, 64, 1)); err != nil {
				t.Fatal(err)
			}
			peerRan, closerRan := make(chan struct{}), make(chan struct{})
			stopPeer := fabric.AfterDone(peer, func() { close(peerRan) })
			fabric.AfterDone(c, func() { close(closerRan) })
			var stoppedRan atomic.Bool
			stop := fabric.AfterDone(peer, func() { stoppedRan.Store(true) })
			if !stop() {
				t.Fatal("stop of a waiting AfterDone: false, want true")
			}
			if stop() {
				t.Fatal("second stop: true, want false")
			}
			if err := c.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if err := c.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			select {
			case <-c.Done():
			default:
				t.Fatal("Done of the closed end not closed")
			}
			if err := c.Err(); !errors.Is(err, fabric.ErrClosed) {
				t.Fatalf("Err of the closed end: %v, want ErrClosed", err)
			}
			if err := c.Post([]fabric.Op{read(peerReg, 0, peerRemote, 0, 64, 2)}); !errors.Is(err, fabric.ErrClosed) {
				t.Fatalf("Post on the closed end: %v, want ErrClosed", err)
			}
			if took, err := waitDone(peer, goneTimeout); err != nil {
				t.Fatal(err)
			} else {
				t.Logf("peer saw the close after %v", took)
			}
			if err := peer.Err(); !errors.Is(err, fabric.ErrPeerGone) {
				t.Fatalf("Err of the peer: %v, want ErrPeerGone", err)
			}
			for _, w := range []struct {
				end string
				ran chan struct{}
			}{{"closed end", closerRan}, {"peer", peerRan}} {
				select {
				case <-w.ran:
				case <-time.After(goneTimeout):
					t.Fatalf("AfterDone of the %s did not run within %v of its end", w.end, goneTimeout)
				}
			}
			if stopPeer() {
				t.Fatal("stop after the function started: true, want false")
			}
			late := make(chan struct{})
			fabric.AfterDone(peer, func() { close(late) })
			select {
			case <-late:
			case <-time.After(goneTimeout):
				t.Fatalf("AfterDone added after the end did not run within %v", goneTimeout)
			}
			if stoppedRan.Load() {
				t.Fatal("an AfterDone function stopped in time ran")
			}
			if err := opFailsGone(peer, read(peerReg, 0, peerRemote, 0, 64, 3)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// opFailsGone requires op on a connection whose peer went to fail with
// ErrPeerGone: at Post, at Poll, or as its completion.
func opFailsGone(c fabric.Conn, op fabric.Op) error {
	err := c.Post([]fabric.Op{op})
	if err == nil {
		var cs []fabric.Completion
		cs, err = reap(c, 1)
		if err == nil {
			err = cs[0].Err
		}
	}
	if !errors.Is(err, fabric.ErrPeerGone) {
		return fmt.Errorf("op after the peer went: %v, want ErrPeerGone", err)
	}
	return nil
}

package tcp

import (
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// Connections their peer drops young count against its source (churn
// pacing: the source's next handshakes wait for slots); connections this
// side closes, young or not, do not.
func TestChurnCountsPeerDrops(t *testing.T) {
	for _, peerDrops := range []bool{true, false} {
		ln := listen(t, fabric.Options{})
		for range churnBurst + 8 {
			d, a := pairOn(t, ln)
			if peerDrops {
				d.Close()
			} else {
				a.Close()
			}
			select {
			case <-a.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("acceptor not done 5 s after the dialer closed")
			}
		}
		wait := ln.(*listener).q.Pace("127.0.0.1")
		if peerDrops && wait <= 0 {
			t.Errorf("after %d young drops by the peer its next handshake is not paced", churnBurst+8)
		}
		if !peerDrops && wait != 0 {
			t.Errorf("connections this side closed paced the peer: %v", wait)
		}
	}
}

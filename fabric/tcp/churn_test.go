package tcp

import (
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/fabrictest"
)

// Connections their peer drops young without asking for anything count
// against its source (churn pacing: the source's next handshakes wait for
// slots); connections this side closes, young or not, do not.
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
			waitAcceptorDone(t, a)
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

// An honest short-lived client (connect, WRITE its request, READ its
// answer, close) costs nothing: 1,000 of them in a loop from one address
// leave its handshakes unpaced. Peers that READ whole regions and drop
// are charged per MiB and paced, as before.
func TestChurnChargesCost(t *testing.T) {
	const region = 256 << 10
	for _, tc := range []struct {
		name  string
		joins int
		reads int // whole-region READs after the request
		paced bool
	}{
		{"honest", 1000, 0, false},
		// Each charged 2 handshakes (2 MiB of READs): twice the burst and
		// more, so that a slow -race loop's decay (churnRate a second)
		// cannot hide the pacing (with half the burst + 4 the margin was
		// 8 handshakes, 0.16 s of decay: a full .ci/run missed it once).
		{"whole-region READs", churnBurst + 4, 8, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln := listen(t, fabric.Options{})
			for i := range tc.joins {
				p, err := fabrictest.Connect(ctxT(t), ln, fabric.Options{}, region, region, nil)
				if err != nil {
					t.Fatalf("join %d: %v", i, err)
				}
				if err := fabric.Write(p.D, p.DReg, 0, p.ToA, 0, 64); err != nil {
					t.Fatalf("join %d: WRITE: %v", i, err)
				}
				if err := fabric.Read(p.D, p.DReg, 0, p.ToA, 4096, 256); err != nil {
					t.Fatalf("join %d: READ: %v", i, err)
				}
				for range tc.reads {
					if err := fabric.Read(p.D, p.DReg, 0, p.ToA, 0, region); err != nil {
						t.Fatalf("join %d: whole READ: %v", i, err)
					}
				}
				p.D.Close()
				waitAcceptorDone(t, p.A)
				p.A.Close()
			}
			wait := ln.(*listener).q.Pace("127.0.0.1")
			if tc.paced && wait <= 0 {
				t.Errorf("%d young peers that READ %d MiB each: the next handshake is not paced", tc.joins, tc.reads*region>>20)
			}
			if !tc.paced && wait != 0 {
				t.Errorf("%d honest joins from one address: the next handshake waits %v", tc.joins, wait)
			}
		})
	}
}

func waitAcceptorDone(t *testing.T, a fabric.Conn) {
	t.Helper()
	select {
	case <-a.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("acceptor not done 5 s after the dialer closed")
	}
}

// Peers the server closes for breaking its protocol (fabric.Penalizer)
// are charged even though they wrote requests: a loop of them is paced
// after churnBurst/penaltyCost of them.
func TestChurnPenalized(t *testing.T) {
	ln := listen(t, fabric.Options{})
	joins := 2 * churnBurst / penaltyCost // twice the burst: decay during a slow loop stays under it
	for i := range joins {
		p, err := fabrictest.Connect(ctxT(t), ln, fabric.Options{}, 4096, 4096, nil)
		if err != nil {
			t.Fatalf("join %d: %v", i, err)
		}
		if err := fabric.Write(p.D, p.DReg, 0, p.ToA, 0, 64); err != nil {
			t.Fatalf("join %d: WRITE: %v", i, err)
		}
		pz, ok := p.A.(fabric.Penalizer)
		if !ok {
			t.Fatal("tcp acceptor connection is no fabric.Penalizer")
		}
		pz.Penalize()
		pz.Penalize() // once per connection
		p.A.Close()
		p.D.Close()
	}
	if wait := ln.(*listener).q.Pace("127.0.0.1"); wait <= 0 {
		t.Errorf("%d penalized peers from one address: the next handshake is not paced", joins)
	}
}

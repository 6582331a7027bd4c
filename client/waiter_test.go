package client

import (
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/rfp"
)

// A caller whose context ends as the driver finishes its call keeps the
// outcome, and reuses its waiter only once the driver has taken the call
// off pending (before, its next call counted as done at once).
func TestGiveUpWaitsForTheDriver(t *testing.T) {
	w, cl := sentCall()
	// The driver's finish, up to its last step: outcome written, done.
	cl.st = rfp.StatusNotFound
	cl.state.Store(callDone)
	returned := make(chan bool, 1)
	go func() { returned <- w.giveUp(cl) }()
	select {
	case <-returned:
		t.Fatal("giveUp returned while the driver still counts the call")
	case <-time.After(50 * time.Millisecond):
	}
	w.pending.Add(-1) // the driver's last step
	select {
	case gaveUp := <-returned:
		if gaveUp {
			t.Fatal("giveUp abandoned a call that was done")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("giveUp still waiting after the driver was through")
	}
	if cl.st != rfp.StatusNotFound {
		t.Fatalf("outcome %v, want the driver's", cl.st)
	}
}

// A call not finished yet is abandoned, and the waiter stays with the driver.
func TestGiveUpAbandons(t *testing.T) {
	w, cl := sentCall()
	if !w.giveUp(cl) || cl.state.Load() != callAbandoned {
		t.Fatalf("giveUp on a call in flight: state %d, want abandoned", cl.state.Load())
	}
}

// sentCall is a waiter with one GET in flight.
func sentCall() (*waiter, *call) {
	w := &waiter{wake: make(chan struct{}, 1)}
	w.begin(1)
	cl := &w.one
	cl.reset(w, 0, rfp.OpGet, []byte("k"), nil, 0, nil)
	cl.state.Store(callSent)
	return w, cl
}

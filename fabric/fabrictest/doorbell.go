package fabrictest

import (
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// testDoorbells checks the optional doorbells: a listener asked for them
// that implements fabric.Doorbells must give dialers a fabric.Ringer whose
// rings wake the right bell, remembered until waited for.
func testDoorbells(t *testing.T, newAddr func(*testing.T) string) {
	ln := listen(t, newAddr, fabric.Options{Doorbells: 3})
	bells, ok := ln.(fabric.Doorbells)
	if !ok {
		t.Skipf("%T offers no doorbells (optional): targets poll instead", ln)
	}
	p := connect(t, ln, fabric.Options{}, 4096, 4096)
	r, ok := p.D.(fabric.Ringer)
	if !ok {
		t.Fatalf("listener offers doorbells but its dialer conn %T cannot ring them", p.D)
	}
	if rang, err := bells.WaitBell(1, 10*time.Millisecond); err != nil || rang {
		t.Fatalf("bell 1 rang before anyone rang it: %v %v", rang, err)
	}
	if err := r.RingBell(1); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if rang, err := bells.WaitBell(1, 5*time.Second); err != nil || !rang {
		t.Fatalf("ring of bell 1 not seen: %v %v", rang, err)
	}
	t.Logf("ring seen after %v", time.Since(start))
	if rang, _ := bells.WaitBell(0, 10*time.Millisecond); rang {
		t.Fatal("bell 0 rang: rings must wake only their bell")
	}
	if rang, _ := bells.WaitBell(1, 10*time.Millisecond); rang {
		t.Fatal("bell 1 still ringing after it was waited for")
	}
	if err := r.RingBell(99); err != nil {
		t.Fatalf("ringing a bell the acceptor does not offer: %v", err)
	}
	// A waiter blocked before the ring wakes.
	woke := make(chan bool, 1)
	go func() {
		rang, _ := bells.WaitBell(2, 5*time.Second)
		woke <- rang
	}()
	time.Sleep(20 * time.Millisecond)
	if err := r.RingBell(2); err != nil {
		t.Fatal(err)
	}
	if !<-woke {
		t.Fatal("blocked waiter on bell 2 did not wake")
	}
}

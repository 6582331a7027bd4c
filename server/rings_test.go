package server

import (
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/client"
	_ "github.com/jakiro-kv/jakiro/fabric/shm"
	"github.com/jakiro-kv/jakiro/rfp"
)

// TestRingAccounting: a ring announced by a marked request of a polled
// client costs no sweep, nor does one whose ringer the fabric names (shm
// names every ringer); a ring no marked request explains (its name lost:
// a peer can clear others') brings a sweep that finds it. The partition goroutine does not run: the test drives its
// bell checks and passes over real shm sessions.
func TestRingAccounting(t *testing.T) {
	srv, p, ctx := drivenServer(t)
	if !p.countsRings || !p.namesRingers {
		t.Fatal("shm counts and names rings, but the partition does not know it")
	}
	active, err := client.Dial(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer active.Close()
	idle, err := client.Dial(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	listed(t, srv, 2)

	// settle accounts for every ring already rung (a finished GET rang
	// before it returned) and ends any sweep they bring.
	settle := func() {
		p.checkBell(0)
		for p.ringDebt > 0 || p.sweeping {
			p.bellPass(srv.now())
		}
	}
	// get runs a GET on each of cs after a quiet spell (each rings), lets
	// every ring land, and runs one partition pass: it returns the sweeps
	// that pass started and how many rings the clients had rung by then.
	// It then serves the GETs to the end.
	// hide drops the ringers' names before the pass.
	hide := false
	get := func(cs ...*client.Client) (sweeps, rings uint64) {
		t.Helper()
		settle()
		before := p.sweeps
		var rung uint64
		for _, c := range cs {
			rung += c.Counters().Rings
		}
		time.Sleep(2 * time.Millisecond) // > rfp.QuietRing: the GETs ring
		done := make(chan error, len(cs))
		for _, c := range cs {
			go func() { _, err := c.Get(ctx, []byte("k")); done <- err }()
		}
		deadline := time.Now().Add(30 * time.Second)
		for p.ringDebt < uint64(len(cs)) {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d rings seen in 30s", p.ringDebt, len(cs))
			}
			p.checkBell(0)
			time.Sleep(100 * time.Microsecond)
		}
		p.reload()
		if hide {
			srv.ln.TakeRingers(p.id, nil)
		}
		p.bellPass(srv.now())
		sweeps = p.sweeps - before
		for _, c := range cs {
			rings += c.Counters().Rings
		}
		rings -= rung
		for answered := 0; answered < len(cs); {
			if time.Now().After(deadline) {
				t.Fatal("GETs not answered in 30s")
			}
			p.reload()
			p.bellPass(srv.now())
			p.checkBell(0)
			select {
			case err := <-done:
				if err != nil && err != client.ErrNotFound {
					t.Fatal(err)
				}
				answered++
			default:
			}
		}
		return sweeps, rings
	}

	settle() // the rings of both Dials
	if n, _ := get(active); n != 0 {
		t.Fatalf("a new client's first request: %d sweeps, want 0 (its ring names it)", n)
	}
	// A request unanswered for rfp.RingAfter rings again, unmarked, and
	// such a ring rightly costs a sweep: on a loaded machine a GET may
	// wait that long for the test to look, so only GETs that had rung
	// once when the pass ran are judged.
	clean := 0
	for i := 0; i < 50 && clean < 5; i++ {
		n, rings := get(active)
		if rings != 1 {
			continue
		}
		clean++
		if n != 0 {
			t.Fatalf("a polled client's GET that rang once: %d sweeps, want 0", n)
		}
	}
	if clean == 0 {
		t.Fatal("no GET in 50 had rung only once when the partition looked")
	}
	if n, _ := get(active, idle); n != 0 {
		t.Fatalf("a polled and an unpolled client ring together: %d sweeps, want 0 (both named)", n)
	}
	hide = true
	time.Sleep(2 * time.Second) // past ActiveHold and warmHold: neither polled nor warm
	now := srv.now()
	p.prune(now, now-rfp.ActiveHold, false)
	if n, _ := get(idle); n != 1 {
		t.Fatalf("an unpolled client's ring without its name: %d sweeps, want 1", n)
	}

	// A new client that rings before the partition holds a list with it:
	// its name is unknown and dropped, the sweep that follows covers only
	// the old list, and a shm client does not remind an awake partition.
	// The partition looks at every peer new in the list it loads.
	settle()
	late, err := client.Dial(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	// Wait until the server has seen every ring the clients rang, the
	// GET's among them (its WRITE went before it): not just any ring.
	r0 := late.Counters().Rings
	rung := func() uint64 { return active.Counters().Rings + idle.Counters().Rings + late.Counters().Rings }
	// A client counts a ring when its request is submitted, before its
	// WRITE and its ring go out; the bell's own count moving past b0 says
	// the ring (and so the WRITE before it) has gone (on a slow emulated
	// CPU the counts alone let the pass run between the two).
	p.checkBell(0)
	b0 := srv.ln.BellRings(p.id)
	done := make(chan error, 1)
	go func() { _, err := late.Get(ctx, []byte("k")); done <- err }()
	deadline := time.Now().Add(30 * time.Second)
	for late.Counters().Rings == r0 || srv.ln.BellRings(p.id) < rung() || srv.ln.BellRings(p.id) == b0 {
		if time.Now().After(deadline) {
			t.Fatal("the new client's ring not seen in 30s")
		}
		p.checkBell(0)
		time.Sleep(100 * time.Microsecond)
	}
	for p.ringDebt > 0 || p.sweeping { // without loading the list
		p.bellPass(srv.now())
	}
	listed(t, srv, 3)
	served := p.served
	p.reload()
	p.bellPass(srv.now())
	if p.served != served+1 {
		t.Fatalf("the pass after loading the list served %d requests, want the new client's GET", p.served-served)
	}
	if err := <-done; err != nil && err != client.ErrNotFound {
		t.Fatal(err)
	}
}

package server

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/client"
	_ "github.com/jakiro-kv/jakiro/fabric/shm"
	"github.com/jakiro-kv/jakiro/rfp"
)

// TestPassFairness: a client keeping a 32-slot ring full beside a client
// with one request: one pass serves at most maxPerPass of the first and
// the second's request too. The partition goroutine does not run; the
// test drives passes itself over real shm sessions.
func TestPassFairness(t *testing.T) {
	srv, p, ctx := drivenServer(t)
	flood, err := client.Dial(ctx, srv.Addr(), client.WithWindow(32))
	if err != nil {
		t.Fatal(err)
	}
	defer flood.Close()
	one, err := client.Dial(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	var batch client.Batch
	for i := 0; i < 32; i++ {
		batch.Get([]byte(fmt.Sprintf("flood-%d", i)))
	}
	done := make(chan error, 2)
	go func() { done <- flood.Run(ctx, &batch) }()
	go func() { _, err := one.Get(ctx, []byte("one")); done <- err }()

	var reqs [rfp.MaxSlots]rfp.Request
	ready := func(c *peer) int { return c.sess.PollBatch(0, srv.now(), reqs[:]) }
	// Wait (bounded) until both clients' requests sit in their rings.
	var fp, op *peer
	for deadline := time.Now().Add(30 * time.Second); ; {
		if time.Now().After(deadline) {
			t.Fatal("requests did not land in 30s")
		}
		p.reload()
		fp, op = nil, nil
		for _, c := range p.all {
			switch ready(c) {
			case 32:
				fp = c
			case 1:
				op = c
			}
		}
		if fp != nil && op != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if n := p.scan(p.all, srv.now()); n != maxPerPass+1 {
		t.Fatalf("one pass served %d requests, want %d (at most %d of the flood, and the lone one)", n, maxPerPass+1, maxPerPass)
	}
	if n := ready(fp); n != 32-maxPerPass {
		t.Fatalf("flood ring holds %d requests after a pass, want %d", n, 32-maxPerPass)
	}
	if n := ready(op); n != 0 {
		t.Fatalf("the lone request was not served in the first pass (%d left)", n)
	}
	if len(p.polled) != 2 {
		t.Fatalf("polled set has %d clients after both had requests, want 2", len(p.polled))
	}
	for served := maxPerPass + 1; served < 33; {
		served += p.scan(p.polled, srv.now())
	}
	for i := 0; i < 2; i++ {
		if err := <-done; err != nil && !errors.Is(err, client.ErrNotFound) {
			t.Fatal(err)
		}
	}
}

package server

import (
	"testing"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/rfp"
)

// TestNewClientPolled: the first pass that sees a new client puts it in
// the polled set before it sends anything (a client joins to send a
// request, found then at the next pass rather than through its ring),
// and an idle one leaves the set after rfp.ActiveHold as any idle client
// does. The partition goroutine does not run: the test drives its passes.
func TestNewClientPolled(t *testing.T) {
	srv, p, ctx := drivenServer(t)
	c, err := client.Dial(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	listed(t, srv, 1)
	p.reload()
	now := srv.now()
	if work := p.bellPass(now); work != 0 || len(p.polled) != 1 {
		t.Fatalf("first pass with a new idle client: %d served, %d polled; want 0 and 1", work, len(p.polled))
	}
	p.prune(now+rfp.ActiveHold+1, now+1, false)
	if len(p.polled) != 0 {
		t.Fatalf("%d polled after ActiveHold without a request, want 0", len(p.polled))
	}
}

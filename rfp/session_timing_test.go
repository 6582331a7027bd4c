package rfp

import (
	"testing"

	"github.com/jakiro-kv/jakiro/fabric"
)

// BenchmarkSessionPollEmpty is a partition's look at a client's request
// ring with nothing new in it: what a busy-polling partition does most,
// once per client per pass.
func BenchmarkSessionPollEmpty(b *testing.B) {
	l, err := NewLayout(1, 8, 1024, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	grant := make([]byte, l.Size())
	region := fabric.NewRegion(grant, fabric.Desc{Len: uint64(len(grant)), Key: testGrantKey}, 0, nil)
	conn := &replyConn{done: make(chan struct{})}
	s := newSession(1, conn, region, l, DefaultReplyTimeout, newLongBudget(DefaultLongBudget), nil)
	var r Request
	for b.Loop() {
		if s.Poll(0, 0, &r) {
			b.Fatal("a request in an empty ring")
		}
	}
}

package server_test

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/rfp"
)

// Clients that start long values and leave them held — GETs of the
// largest value whose pieces they never fetch, requests in parts never
// joined — fill what the server keeps for long values. Each client draws
// on its own share first (rfp.LongShare), so an honest client's long
// values all succeed beside them, and the server's RSS grows by at most
// the listener's pool and the attackers' shares.
func TestHostileLongHolds(t *testing.T) {
	const maxValue = 1 << 20
	// 48 × 8 slots of 1 MiB: past the 256 MiB pool of before;
	// JAKIRO_HOLD_CONNS=400 runs the count.
	conns := envInt("JAKIRO_HOLD_CONNS", 48)
	srv := startJakiro(t, buildJakiro(t), "shm://"+filepath.Join(t.TempDir(), "j.sock"),
		"--max-value", "1MiB", "--partitions", "1", "--memory", "256MiB")
	honest := dialT(t, srv.Addr)
	ctx := ctxT(t)
	big := bytes.Repeat([]byte("L"), maxValue)
	if err := honest.Put(ctx, []byte("hold:big"), big, 0); err != nil {
		t.Fatal(err)
	}
	mid := value("hold:honest", 20<<10)
	if err := honest.Put(ctx, []byte("hold:honest"), mid, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	idle := rss(t, srv.pid())

	slots := 0
	var peak int64
	for range conns {
		r := dialRaw(t, srv.Addr)
		slots = r.w.Layout.Slots
		// Every slot: a GET of the 1 MiB value with room for 16 bytes of
		// it inline. The rest waits for pieces nobody asks for.
		for seq := uint32(1); seq <= uint32(slots); seq++ {
			b := make([]byte, rfp.RequestLen([]byte("hold:big"), nil))
			rfp.PutRequest(b, rfp.ReqHeader{Seq: seq, Op: rfp.OpGet, Budget: 16}, []byte("hold:big"), nil)
			r.send(0, seq, b)
		}
		// One long request in parts, never joined.
		part := make([]byte, 4096)
		b := make([]byte, rfp.RequestLen([]byte("hold:part"), part))
		rfp.PutRequest(b, rfp.ReqHeader{Seq: uint32(slots) + 1, Op: rfp.OpPut, Flags: rfp.FlagPart, Total: maxValue}, []byte("hold:part"), part)
		r.send(0, uint32(slots)+1, b)
		if rg, ok := r.conn.(fabric.Ringer); ok {
			rg.RingBell(0) // found now, not at the next sweep
		}
		for seq := uint32(1); seq <= uint32(slots)+1; seq++ {
			r.status(0, seq, 10*time.Second) // the server took them all
		}
	}
	peak = max(peak, rss(t, srv.pid()))
	// The honest client's long values, beside everything held.
	fails := 0
	for i := range 200 {
		v, err := honest.Get(ctx, []byte("hold:honest"))
		if err != nil || !bytes.Equal(v, mid) {
			fails++
			if fails < 4 {
				t.Errorf("honest long GET %d: %d bytes, %v", i, len(v), err)
			}
		}
		if i%20 == 0 {
			err := honest.Put(ctx, []byte("hold:honest"), mid, 0)
			if err != nil {
				fails++
				t.Errorf("honest long PUT %d: %v", i, err)
			}
		}
	}
	peak = max(peak, rss(t, srv.pid()))
	// What a connection may cost: its long-value share, and its grant
	// and session (48 KiB of rings here; 256 KiB stated).
	perConn := int64(rfp.LongShare(maxValue)) + 256<<10
	limit := idle + rfp.DefaultLongBudget + int64(conns)*perConn + 64<<20
	t.Logf("%d clients holding %d long GETs and a request in parts each: honest failures %d of 210; server RSS idle %.1f MiB, peak %.1f MiB (bound %.1f MiB: idle + pool %d MiB + %d × %.2f MiB + 64 MiB)",
		conns, slots, fails, mib(idle), mib(peak), mib(limit), rfp.DefaultLongBudget>>20, conns, mib(perConn))
	if peak > limit {
		t.Errorf("server RSS %.1f MiB, over %.1f MiB", mib(peak), mib(limit))
	}
}

package server_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/rfp"
)

// rawClient speaks the protocol by hand over the fabric, to send what the
// SDK never would. It keeps each partition's ring positions as the engine
// does.
type rawClient struct {
	t     *testing.T
	conn  fabric.Conn
	local *fabric.Region
	w     rfp.Welcome
	wpos  []uint64 // request ring write positions
	rpos  []uint64 // response ring read positions
}

func dialRaw(t *testing.T, addr string) *rawClient {
	ctx := ctxT(t)
	setup, err := fabric.Dial(ctx, addr, fabric.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hello := rfp.Hello{Version: rfp.Version, Proof: rfp.AuthProof(os.Getenv(rfp.AuthTokenEnv)), HasProof: true}
	conn, err := setup.Establish(ctx, hello.Put())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	w, err := rfp.ParseWelcome(conn.PeerData())
	if err != nil {
		t.Fatal(err)
	}
	local, err := conn.Alloc(w.Layout.Size())
	if err != nil {
		t.Fatal(err)
	}
	n := w.Layout.Partitions
	return &rawClient{t: t, conn: conn, local: local, w: w, wpos: make([]uint64, n), rpos: make([]uint64, n)}
}

// send WRITEs b as the next request record of partition p (small records:
// the tests never fill a lap).
func (r *rawClient) send(p int, seq uint32, b []byte) {
	if !r.sendOrGone(p, seq, b) {
		r.t.Fatal(fabric.ErrPeerGone)
	}
}

// sendOrGone is send for an attacker: false if the server has closed the
// connection already (what the attack is to bring about).
func (r *rawClient) sendOrGone(p int, seq uint32, b []byte) bool {
	l := r.w.Layout
	off := l.ReqBase(p) + int(r.wpos[p]%uint64(l.ReqRing))
	copy(r.local.Bytes()[off:], b)
	if err := fabric.Write(r.conn, r.local, off, r.w.Grant, uint64(off), len(b)); err != nil {
		if errors.Is(err, fabric.ErrPeerGone) {
			return false
		}
		r.t.Fatal(err)
	}
	r.wpos[p] += uint64(len(b))
	return true
}

// skipLap moves p's request ring to its next lap: where the server looks
// after skipping a record whose length it could not trust.
func (r *rawClient) skipLap(p int) {
	ring := uint64(r.w.Layout.ReqRing)
	r.wpos[p] += ring - r.wpos[p]%ring
}

// status fetches the response to seq, waiting up to timeout.
func (r *rawClient) status(p int, seq uint32, timeout time.Duration) rfp.Status {
	l := r.w.Layout
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		off := l.RespBase(p) + int(r.rpos[p]%uint64(l.RespRing))
		n := l.RespBase(p) + l.RespRing - off
		if err := fabric.Read(r.conn, r.local, off, r.w.Grant, uint64(off), n); err != nil {
			r.t.Fatal(err)
		}
		var resp rfp.Response
		if st, _ := rfp.ParseResponse(r.local.Bytes()[off:off+n], seq, 1<<20, &resp); st == rfp.SlotReady {
			r.rpos[p] += uint64(resp.Len)
			return resp.Status
		}
		time.Sleep(100 * time.Microsecond)
	}
	r.t.Fatalf("no response to seq %d in %v", seq, timeout)
	return 0
}

func request(seq uint32, op rfp.Op, key, val []byte) []byte {
	b := make([]byte, rfp.RequestLen(key, val))
	rfp.PutRequest(b, rfp.ReqHeader{Seq: seq, Op: op, Budget: 1024}, key, val)
	return b
}

// testMalformedSlots: unknown ops, keys sent to the wrong partition,
// impossible lengths and bad checksums get StatusBadRequest (the last two
// after rfp.StuckTimeout), and the ring keeps working afterwards.
func testMalformedSlots(t *testing.T, addr string) {
	r := dialRaw(t, addr)
	seq := uint32(1)
	var missing []byte // a key of partition 0 that is never stored
	for i := 0; missing == nil; i++ {
		if k := []byte(fmt.Sprintf("never-stored-%d", i)); rfp.PartitionOf(rfp.KeyHash(k), r.w.Layout.Partitions) == 0 {
			missing = k
		}
	}
	check := func(what string, b []byte, want rfp.Status, timeout time.Duration) {
		t.Helper()
		r.send(0, seq, b)
		if got := r.status(0, seq, timeout); got != want {
			t.Fatalf("%s: status %v, want %v", what, got, want)
		}
		seq++
	}
	check("unknown op", request(seq, rfp.Op(99), []byte("k"), nil), rfp.StatusBadRequest, 5*time.Second)
	check("op zero", request(seq, 0, []byte("k"), nil), rfp.StatusBadRequest, 5*time.Second)
	if r.w.Layout.Partitions > 1 {
		var foreign []byte
		for i := 0; ; i++ {
			k := []byte(fmt.Sprintf("foreign-%d", i))
			if rfp.PartitionOf(rfp.KeyHash(k), r.w.Layout.Partitions) != 0 {
				foreign = k
				break
			}
		}
		check("key of another partition", request(seq, rfp.OpPut, foreign, []byte("x")), rfp.StatusBadRequest, 5*time.Second)
	}
	bad := request(seq, rfp.OpGet, []byte("k"), nil)
	binary.LittleEndian.PutUint32(bad[8:], 1<<30) // value length beyond any ring
	check("impossible lengths", bad, rfp.StatusBadRequest, 5*time.Second)
	r.skipLap(0)
	bad = request(seq, rfp.OpGet, []byte("k"), nil)
	bad[24+1] ^= 0xff // checksum wrong (it follows the 24-byte header and the key)
	check("bad checksum", bad, rfp.StatusBadRequest, 5*time.Second)
	check("empty key", request(seq, rfp.OpGet, nil, nil), rfp.StatusBadKey, 5*time.Second)
	// The memcached commands' extras (rfp/commands.go) are checked too.
	check("store without extras", request(seq, rfp.OpStore, missing, []byte("short")), rfp.StatusBadRequest, 5*time.Second)
	badMode := make([]byte, rfp.StoreExtraLen)
	badMode[0] = 200
	check("store of mode 200", request(seq, rfp.OpStore, missing, badMode), rfp.StatusBadRequest, 5*time.Second)
	check("incr with short extras", request(seq, rfp.OpIncr, missing, []byte{0, 0, 1}), rfp.StatusBadRequest, 5*time.Second)
	check("gets with a value", request(seq, rfp.OpGets, missing, []byte("x")), rfp.StatusBadRequest, 5*time.Second)
	check("touch of a missing key", request(seq, rfp.OpTouch, missing, nil), rfp.StatusNotFound, 5*time.Second)
	check("valid get after all that", request(seq, rfp.OpGet, missing, nil), rfp.StatusNotFound, 5*time.Second)

	// A stranger that does not speak the protocol is refused; the server
	// goes on.
	ctx := ctxT(t)
	setup, err := fabric.Dial(ctx, addr, fabric.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if conn, err := setup.Establish(ctx, []byte("GET / HTTP/1.0")); err == nil {
		conn.Close()
		t.Fatal("server accepted a handshake that is not Jakiro's")
	}
	check("valid get after a refused stranger", request(seq, rfp.OpGet, missing, nil), rfp.StatusNotFound, 5*time.Second)
}

// testIsolation: a client that WRITEs or READs with another client's
// grant descriptor (a guessed key and offset) gets a remote access error,
// and the victim's rings are untouched.
func testIsolation(t *testing.T, addr string) {
	victim := dialRaw(t, addr)
	attacker := dialRaw(t, addr)
	l := victim.w.Layout
	off := l.ReqBase(0)
	req := request(1, rfp.OpPut, []byte("stolen"), []byte("x"))
	copy(attacker.local.Bytes()[off:], req)
	err := fabric.Write(attacker.conn, attacker.local, off, victim.w.Grant, uint64(off), len(req))
	if !errors.Is(err, fabric.ErrRemoteAccess) {
		t.Fatalf("WRITE into another client's ring: %v, want ErrRemoteAccess", err)
	}
	reader := dialRaw(t, addr)
	err = fabric.Read(reader.conn, reader.local, 0, victim.w.Grant, uint64(l.RespBase(0)), 64)
	if !errors.Is(err, fabric.ErrRemoteAccess) {
		t.Fatalf("READ of another client's responses: %v, want ErrRemoteAccess", err)
	}
	// The victim's ring saw nothing: its first request is still seq 1.
	missing := []byte("isolation-check")
	victim.send(rfp.PartitionOf(rfp.KeyHash(missing), l.Partitions), 1, request(1, rfp.OpGet, missing, nil))
	if st := victim.status(rfp.PartitionOf(rfp.KeyHash(missing), l.Partitions), 1, 5*time.Second); st != rfp.StatusNotFound {
		t.Fatalf("victim's GET after the attack: %v", st)
	}
}

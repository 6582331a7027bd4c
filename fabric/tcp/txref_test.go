package tcp

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/unix"
)

// Responses staged by copy and by reference, sent through a small socket
// buffer in many partial sends, with the buffer slid down between them,
// arrive as one stream in order; every reference is let go once sent,
// and a WRITE into a referenced range does not change what goes out.
func TestStagedByReference(t *testing.T) {
	d := newDomain(1 << 24)
	t.Cleanup(d.closeAll)
	pub, err := d.alloc(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	r := d.local(pub)
	for i := range r.mem {
		r.mem[i] = byte(i * 7)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, 4096)
	rng := rand.New(rand.NewPCG(1, 2))
	base := r.state.Load()
	for round := range 20 {
		var tx txState
		var want []byte
		for range 1 + rng.IntN(40) {
			off := uint64(rng.IntN(1 << 19))
			n := uint64(rng.IntN(3 * refMin))
			if rng.IntN(4) == 0 {
				tx.putResp(statusAccess, nil)
				want = append(want, frameResp, statusAccess)
				continue
			}
			if !r.acquire() {
				t.Fatal("region closed")
			}
			tx.putReadResp(r, off, r.mem[off:off+n])
			want = append(want, frameResp, statusOK)
			want = append(want, r.mem[off:off+n]...)
		}
		if tx.staged() != len(want) {
			t.Fatalf("round %d: %d bytes staged, want %d", round, tx.staged(), len(want))
		}
		// A WRITE lands in a referenced range: the answer keeps the old
		// bytes.
		wOff := uint64(rng.IntN(1 << 19))
		tx.unshare(r, wOff, 8192)
		for i := range uint64(8192) {
			r.mem[wOff+i] ^= 0xff
		}
		var got []byte
		buf := make([]byte, 1500)
		for !tx.empty() {
			if _, err := tx.sendStaged(fds[0]); err != nil {
				t.Fatal(err)
			}
			if tx.start > len(tx.buf)/2 {
				tx.slide()
			}
			n, _ := unix.Read(fds[1], buf[:1+rng.IntN(len(buf)-1)])
			if n > 0 {
				got = append(got, buf[:n]...)
			}
		}
		for len(got) < len(want) {
			n, err := unix.Read(fds[1], buf)
			if n <= 0 {
				t.Fatalf("round %d: read %d of %d bytes: %v", round, len(got), len(want), err)
			}
			got = append(got, buf[:n]...)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("round %d: the stream differs from what was staged", round)
		}
		if s := r.state.Load(); s != base {
			t.Fatalf("round %d: region references %d, want %d: not all let go", round, s, base)
		}
		for i := range uint64(8192) {
			r.mem[wOff+i] ^= 0xff
		}
	}
}
